import ServiceLifecycle

// swift-apns' connectors are services (swift-service-lifecycle): put one in a `ServiceGroup` and a
// SIGTERM drains its sends before the process exits.

extension TokenConnector: Service {
    /// Runs until the service group shuts down gracefully, then stops taking sends, lets those in
    /// flight finish for up to `TransportConfiguration.shutdownGracePeriod` and closes the
    /// connections (``shutdown(gracePeriod:)``). Cancelled instead, it shuts down with no grace
    /// period. The connector sends whether or not `run()` runs; `run()` only ties its end to the
    /// service group's.
    ///
    /// ```swift
    /// let connector = try TokenConnector(teamID: teamID, keyID: keyID, key: .file(path: keyPath), environment: .production)
    /// let group = ServiceGroup(services: [connector, httpServer], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        await runUntilShutdown(gracePeriod: transport.shutdownGracePeriod) { gracePeriod in await shutdown(gracePeriod: gracePeriod) }
    }
}

extension CertificateConnector: Service {
    /// Runs until the service group shuts down gracefully, then drains and closes; see
    /// ``TokenConnector/run()``.
    public func run() async throws {
        await runUntilShutdown(gracePeriod: transport.shutdownGracePeriod) { gracePeriod in await shutdown(gracePeriod: gracePeriod) }
    }
}

/// Waits for graceful shutdown (or cancellation), then shuts down with the grace period (or none).
private func runUntilShutdown(gracePeriod: Duration, shutdown: (Duration) async -> Void) async {
    do {
        try await gracefulShutdown()
        await shutdown(gracePeriod)
    } catch {
        await shutdown(.zero)  // cancelled: the supervisor wants it gone now
    }
}
