/// A connector chosen at run time — token or certificate, from configuration — that keeps the
/// push-type rules: sends through it check, before any I/O, that the push type accepts the
/// underlying connector's authentication, and throw
/// ``APNsValidationError/authenticationNotAllowed(pushType:method:)`` when it does not.
///
/// ```swift
/// let connector: AnyConnector
/// if let keyPath = environment["APNS_KEY_FILE"] {
///     connector = AnyConnector(try TokenConnector(
///         teamID: teamID, keyID: keyID, key: .file(path: keyPath), environment: .production))
/// } else {
///     connector = AnyConnector(try CertificateConnector(
///         pkcs12: .file(path: p12Path), password: password, environment: .production))
/// }
/// try await send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, via: connector, to: device)
/// // An MDM push through the token connector throws .validation(.authenticationNotAllowed(…)).
/// ```
///
/// ``shutdown(gracePeriod:)`` shuts the wrapped ``TokenConnector`` or ``CertificateConnector``
/// down; await it before the process exits.
///
/// Thread safety: `Sendable`; use one value from any number of tasks (it forwards to the wrapped
/// connector, which must be safe to call concurrently, as every connector is).
public struct AnyConnector: Connector, CustomStringConvertible {
    /// How this connector authenticates.
    public typealias Authentication = RunTimeAuthentication

    /// The wrapped connector.
    public let base: any Connector
    /// The wrapped connector's authentication.
    public let authenticationMethod: AuthenticationMethod
    /// The wrapped connector's engine, when it is one of swift-apns' own: what the send paths use.
    let engine: ConnectorEngine?

    /// Wraps `base`; an ``AnyConnector`` is not wrapped twice.
    public init(_ base: some Connector) {
        if let already = base as? AnyConnector {
            self = already
        } else {
            self.base = base
            authenticationMethod = base.authenticationMethod
            engine = (base as? any TransportConnector)?.engine
        }
    }

    /// Checks the request's rules for the wrapped connector's authentication, then forwards it.
    public func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
        do { try request.checkRules(for: authenticationMethod) } catch { throw APNsError.validation(error) }
        return try await base.perform(request)
    }

    /// Checks the request's rules for the wrapped connector's authentication, then forwards it.
    public func perform(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse {
        do { try request.checkRules(for: authenticationMethod) } catch { throw APNsError.validation(error) }
        return try await base.perform(request, deadline: deadline)
    }

    /// The wrapped connector's.
    public var concurrencyLimit: Int { base.concurrencyLimit }

    /// The wrapped ``TokenConnector``'s or ``CertificateConnector``'s transport thread as a task
    /// executor (see ``TransportConnector/taskExecutor``); nil for any other connector, which
    /// `withTaskExecutorPreference` takes as no preference.
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(connector.taskExecutor) {
    ///     try await send(notification, via: connector, to: device)
    /// }
    /// ```
    public var taskExecutor: (any TaskExecutor)? { engine?.transport.taskExecutor }

    /// Shuts the wrapped ``TokenConnector`` or ``CertificateConnector`` down: it stops taking
    /// sends, lets those in flight finish for up to `gracePeriod`, fails the rest and closes the
    /// connections. Any other connector (a recording one, say) has nothing to release, and this
    /// returns at once.
    ///
    /// ```swift
    /// await connector.shutdown(gracePeriod: .seconds(5))
    /// ```
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        await engine?.transport.shutdown(gracePeriod: gracePeriod)
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { "AnyConnector(\(base))" }
}
