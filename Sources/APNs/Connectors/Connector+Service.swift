import ServiceLifecycle

// swift-apns' connectors are services (swift-service-lifecycle): put one in a `ServiceGroup` and a
// SIGTERM drains its sends before the process exits.

extension TokenConnector: Service {
    /// Keeps a connection to APNs warm until the service group shuts down gracefully, then stops
    /// taking sends, lets those in flight finish for up to
    /// `TransportConfiguration.shutdownGracePeriod` and closes the connections
    /// (``shutdown(gracePeriod:)``). Cancelled instead, it shuts down with no grace period.
    ///
    /// While it runs, a connection is open before the first send and reopened whenever it is lost
    /// (`TransportConfiguration.keepsConnectionWarm`, on by default); nothing is written on it but
    /// your sends. The connector sends whether or not `run()` runs: without it, the first send
    /// connects.
    ///
    /// ```swift
    /// let connector = try TokenConnector(teamID: teamID, keyID: keyID, key: .file(path: keyPath), environment: .production)
    /// let group = ServiceGroup(services: [connector, httpServer], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        await runUntilShutdown(transport, warming: environment.endpoint(for: .device)) { gracePeriod in
            await shutdown(gracePeriod: gracePeriod)
        }
    }
}

extension CertificateConnector: Service {
    /// Keeps a connection to APNs warm until the service group shuts down gracefully, then drains
    /// and closes; see ``TokenConnector/run()``.
    public func run() async throws {
        await runUntilShutdown(transport, warming: environment.endpoint(for: .device)) { gracePeriod in
            await shutdown(gracePeriod: gracePeriod)
        }
    }
}

/// Keeps a connection to `endpoint` warm (unless configured not to) and waits for graceful shutdown
/// (or cancellation), then shuts down with the grace period (or none).
private func runUntilShutdown(
    _ transport: CurlTransport, warming endpoint: APNsEnvironment.Endpoint, shutdown: (Duration) async -> Void
) async {
    if transport.keepsConnectionWarm { transport.keepWarm(endpoint) }
    let gracePeriod = transport.shutdownGracePeriod
    do {
        try await gracefulShutdown()
        await shutdown(gracePeriod)
    } catch {
        await shutdown(.zero)  // cancelled: the supervisor wants it gone now
    }
}
