import ServiceLifecycle

/// swift-apns' own connectors, ``TokenConnector`` and ``CertificateConnector``: each holds HTTP/2
/// connections to APNs on a thread of its own. What they share is defined
/// here, once: sending, shutting down, running as a service, the transport thread as a task
/// executor, and the connection counts.
///
/// Only swift-apns' connectors conform: the one requirement is made by them alone. Code that needs one of
/// them, rather than any connector (a recording one in tests), takes `some TransportConnector`:
///
/// ```swift
/// func drain(_ connector: some TransportConnector) async {
///     await connector.shutdown(gracePeriod: .seconds(5))
///     print("opened \(connector.connectionsOpened) connections")
/// }
/// ```
///
/// Thread safety: `Sendable`; use one connector from any number of tasks.
public protocol TransportConnector: Connector, Service where Authentication: FixedAuthenticationKind {
    /// The machinery behind the connector; it has no public members.
    @_documentation(visibility: internal)
    var engine: ConnectorEngine { get }
}

extension TransportConnector {
    /// Sends one request within the connector's default timeout
    /// (`TransportConfiguration.requestTimeout`).
    /// - Throws: ``APNsError/validation(_:)`` before any I/O when the request breaks its push
    ///   type's rules for this connector's authentication (``APNsRequest/checkRules(for:)``);
    ///   ``APNsError/credential(_:)`` when a certificate does not cover it; otherwise what the
    ///   transport reports. A rejection is a response, not an error.
    public func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
        try await perform(request, deadline: SendDeadline.of(timeout: nil, from: engine.clock.now, engine: engine))
    }

    /// Sends one request, giving up at `deadline`; checked as ``perform(_:)`` is.
    public func perform(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse {
        try checkBeforeSending(request, via: self, engine: engine)
        return try await engine.exchange(checked: request, deadline: deadline).response
    }

    /// Sends `request` without checking its push type's rules: SPI for tests that show how a server
    /// answers a request the library would refuse (the mock server's own tests). Not public API.
    @_spi(RawRequests) public func performWithoutRuleCheck(_ request: APNsRequest) async throws -> APNsHTTPResponse {
        try await engine.exchange(
            checked: request, deadline: SendDeadline.of(timeout: nil, from: engine.clock.now, engine: engine)
        ).response
    }

    /// Stops taking sends, lets those in flight finish for up to `gracePeriod`, then fails the rest
    /// (``TransportError/Kind-swift.struct/shutDown``, with their delivery) and closes the
    /// connections. Returns once everything is released; it never blocks a thread while waiting.
    /// Sends made afterwards fail at once, not sent.
    ///
    /// ```swift
    /// await connector.shutdown(gracePeriod: .seconds(5))
    /// ```
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        await engine.transport.shutdown(gracePeriod: gracePeriod)
    }

    /// Keeps a connection to APNs warm until the service group shuts down gracefully, then stops
    /// taking sends, lets those in flight finish for up to
    /// `TransportConfiguration.shutdownGracePeriod` and closes the connections
    /// (``shutdown(gracePeriod:)``). Cancelled instead, it shuts down with no grace period.
    ///
    /// While it runs, a connection is open before the first send and reopened whenever it is lost
    /// (`TransportConfiguration.keepsConnectionWarm`, on by default, with libcurl 7.88 or later);
    /// nothing is written on it but your sends. The connector sends whether or not `run()` runs: without it, the first send
    /// connects.
    ///
    /// ```swift
    /// let connector = try TokenConnector(teamID: teamID, keyID: keyID, key: .file(path: keyPath), environment: .production)
    /// let group = ServiceGroup(services: [connector, httpServer], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public func run() async throws {
        let transport = engine.transport
        if transport.keepsConnectionWarm { transport.keepWarm(engine.environment.endpoint(for: .device)) }
        do {
            try await gracefulShutdown()
            await shutdown(gracePeriod: transport.shutdownGracePeriod)
        } catch {
            await shutdown(gracePeriod: .zero)  // cancelled: the supervisor wants it gone now
        }
    }

    /// The connector's transport thread as a task executor: a task that prefers it runs on the
    /// thread that drives libcurl, so a send made there, and the code after it, cross no thread.
    ///
    /// A send from an ordinary task is handed to the transport thread, and its answer back to the
    /// concurrency pool: two thread wake-ups per send. For a latency-sensitive sequence of sends,
    /// run it here (the benchmarks' README, Benchmarks/README.md, has the figures):
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(connector.taskExecutor) {
    ///     for device in devices {
    ///         try await send(notification, via: connector, to: device)
    ///     }
    /// }
    /// // or: Task(executorPreference: connector.taskExecutor) { … }
    /// ```
    ///
    /// A bulk `send(_:via:to:)` (one notification, many devices) made there runs there whole,
    /// the part that reads `devices` included: no thread hand-off per batch or per outcome.
    ///
    /// Keep that code short and never blocking (a bulk send's `onOutcome` and its `devices`
    /// sequence too): while it runs, the connector sends and receives nothing. Actor-isolated code
    /// still runs on its actor. Once the connector shuts down, a task that prefers it runs on the
    /// global concurrent executor instead.
    public var taskExecutor: any TaskExecutor { engine.transport.taskExecutor }

    /// The transport's capacity with every connection the pool may carry:
    /// `maximumConcurrentStreams × (maximumConnectionsPerHost + additionalConnectionsWhenSlow)`.
    public var concurrencyLimit: Int { engine.transport.capacity }

    /// Connections opened so far.
    public var connectionsOpened: Int { engine.transport.connectionsOpened }

    /// Connections closed because they stopped answering (a written request timed out with
    /// nothing answered on its connection since).
    public var stalledConnectionsClosed: Int { engine.transport.stalledConnectionsClosed }

    /// Times the circuit breaker opened (see ``CircuitBreakerPolicy``).
    public var circuitTrips: Int { engine.transport.circuitTrips }

    /// Slow spells the pool entered: every stream busy, each cycle well past the round trip
    /// (``CycleWatch``; what `apns.pool.slow_cycles` counts), for the benchmark and tests.
    package var slowCycles: Int { engine.transport.slowCycles }
    /// Connections the pool added while slow, and took away again.
    package var connectionsAdded: Int { engine.transport.connectionsAdded }
    package var connectionsRetired: Int { engine.transport.connectionsRetired }

    /// libcurl easy handles that exist (in use or idle): for the soak's memory figures.
    @_spi(Benchmarks) public var easyHandleCount: Int { engine.transport.easyHandleCount }
}
