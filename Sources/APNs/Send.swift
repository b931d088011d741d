import Tracing

/// Sends a notification to a device through a token connector.
///
/// Compiles only when the push type accepts token authentication (every type but MDM).
///
/// ```swift
/// let response = try await send(
///     AlertNotification(bundleID: "com.example.app") { Alert("Hello") },
///     via: connector, to: try Device(token: deviceToken), timeout: .seconds(5))
/// print(response.apnsID)
/// ```
/// - Parameters:
///   - notification: What to send; its request is built and checked before any I/O.
///   - connector: A token connector (or a recording connector standing in for one).
///   - device: The device token to send to.
///   - timeout: How long the send may take from now, retries included, however long it waits for a
///     connection or a free stream; nil uses the connector's `TransportConfiguration.requestTimeout`.
///   - retry: When to try again on its own (``RetryPolicy``); none by default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError``: ``APNsError/validation(_:)`` before any I/O; ``APNsError/rejected(_:)``
///   when APNs refuses; ``APNsError/transport(_:)`` when no answer came back (its delivery says
///   whether the notification may have been delivered), including cancellation and timeout.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.request(to: device)
    }
}

/// Sends a notification to a device through a certificate connector.
///
/// Compiles only when the push type accepts certificate authentication (not location,
/// fileprovider, widgets or controls).
///
/// ```swift
/// try await send(BackgroundNotification(bundleID: "com.example.app"), via: certificateConnector, to: device)
/// ```
/// - Parameters:
///   - notification: What to send; its request is built and checked before any I/O.
///   - connector: A certificate connector (or a recording connector standing in for one).
///   - device: The device token to send to.
///   - timeout: How long the send may take from now, retries included; nil uses the connector's
///     default.
///   - retry: When to try again on its own (``RetryPolicy``); none by default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError`` (see the token variant).
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.request(to: device)
    }
}

/// Sends a notification to a device through a connector chosen at run time.
///
/// The push type's rules for the wrapped connector's authentication are checked before any I/O.
///
/// ```swift
/// let connector = AnyConnector(try makeConnectorFromConfiguration())
/// try await send(BackgroundNotification(bundleID: "com.example.app"), via: connector, to: device)
/// ```
/// - Throws: ``APNsError``; ``APNsValidationError/authenticationNotAllowed(pushType:method:)``
///   when the push type does not accept the connector's authentication (nothing is sent).
@discardableResult
public func send<Notification: PushNotification>(
    _ notification: Notification, via connector: AnyConnector, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.request(to: device)
    }
}

/// Builds the request, checks it against its push type's rules for the connector's
/// authentication, performs it within the deadline (retrying as the policy allows) and interprets
/// the answer: the one path every single send shares. Every failure leaves as an ``APNsError``;
/// one refused before any I/O is counted and logged as a refusal (`pushType` names it when the
/// request could not be built).
func deliver(
    _ pushType: PushType?, via connector: some Connector, timeout: Duration?, retry: RetryPolicy = .none,
    request build: () throws(APNsValidationError) -> APNsRequest
) async throws(APNsError) -> APNsResponse {
    let request: APNsRequest
    let shipped: (any ShippedConnector)?
    let deadline: ContinuousClock.Instant?
    do throws(APNsError) {
        try retry.validate()
        deadline = try APNs.deadline(after: timeout, via: connector, retry: retry)
        do { request = try build() } catch { throw .validation(error) }
        shipped = try checkBeforeSending(request, via: connector)
    } catch {
        (unwrapped(connector) as? any ShippedConnector)?.observability.recordRefusal(
            pushType: pushType?.rawValue ?? "none", error: error)
        throw error
    }
    let observability = shipped?.observability ?? .spansOnly
    let summary = RequestSummary(request)
    let span = observability.startSpan("apns.send", summary: summary)
    let started = ContinuousClock.now
    if observability.isEnabled {
        observability.sendsInFlight.increment()
        if observability.logger.logLevel <= .trace {
            var metadata = summary.metadata
            if let device = RequestSummary.device(inPath: request.path) { metadata["apns.device_token"] = "\(device)" }
            observability.logger.trace("Sending APNs push", metadata: metadata)
        }
    }
    let (raw, attempts) = await attempt(request, via: connector, shipped: shipped, deadline: deadline, retry: retry)
    let result: Result<APNsResponse, APNsError>
    switch raw {
    case .success(let response):
        do { result = .success(try APNsResponse(interpreting: response)) } catch { result = .failure(.rejected(error)) }
    case .failure(let error):
        result = .failure(error)
    }
    let duration = ContinuousClock.now - started
    if observability.isEnabled {
        observability.sendsInFlight.decrement()
        observability.recordSend(pushType: summary.pushType, result: result, duration: duration)
        observability.retried(.policy, times: attempts - 1)
        observability.logSend(
            summary, result: result, duration: duration, attempts: attempts,
            device: RequestSummary.device(inPath: request.path))
    }
    Observability.endSpan(span, result: result, attempts: attempts)
    return try result.get()
}

/// The send's deadline: `now + timeout`; without a timeout, nil (each connector applies its own),
/// except that retries need one deadline for all attempts — the connector's default. A timeout
/// that is not positive, or over 24 hours, is refused.
func deadline(
    after timeout: Duration?, via connector: some Connector, retry: RetryPolicy
) throws(APNsError) -> ContinuousClock.Instant? {
    try TransportConfiguration.validate(sendTimeout: timeout)
    return deadline(afterValid: timeout, via: connector, retry: retry)
}

/// ``deadline(after:via:retry:)`` for a timeout already checked.
func deadline(
    afterValid timeout: Duration?, via connector: some Connector, retry: RetryPolicy
) -> ContinuousClock.Instant? {
    if let timeout { return .now + timeout }
    guard retry.maximumAttempts > 1 else { return nil }
    return .now + ((unwrapped(connector) as? any ShippedConnector)?.defaultTimeout ?? .seconds(30))
}

/// The connector an ``AnyConnector`` wraps, or `connector` itself.
func unwrapped(_ connector: some Connector) -> any Connector {
    (connector as? AnyConnector)?.base ?? connector
}

/// Performs `request`, and again while `retry` allows and the deadline leaves room. An HTTP answer
/// is returned as it is (a retryable rejection's last answer included); a failure as an
/// ``APNsError``. The request's rules have been checked.
/// Returns the last result and the number of attempts made.
func attempt(
    _ request: APNsRequest, via connector: some Connector, shipped: (any ShippedConnector)?,
    deadline: ContinuousClock.Instant?,
    retry: RetryPolicy
) async -> (Result<APNsHTTPResponse, APNsError>, attempts: Int) {
    var attempt = 1
    while true {
        let result: Result<APNsHTTPResponse, APNsError>
        let failure: APNsError?
        do {
            let response = try await perform(checked: request, via: connector, shipped: shipped, deadline: deadline)
            result = .success(response)
            failure = (200..<300).contains(response.status) ? nil : .rejected(APNsRejection(response))
        } catch {
            result = .failure(error)
            failure = error
        }
        guard let failure, let delay = retry.delay(after: failure, attempt: attempt) else { return (result, attempt) }
        if let deadline, ContinuousClock.now + delay >= deadline { return (result, attempt) }
        do {
            try await Task.sleep(for: delay)
        } catch {
            // The earlier attempt's failure said whether anything may have been delivered; the
            // cancelled wait sent nothing more. Keep the honest delivery of what was sent.
            if failure.mayHaveBeenDelivered { return (result, attempt) }
            return (.failure(.transport(.cancelled(delivery: .notSent))), attempt)
        }
        attempt += 1
    }
}

/// swift-apns' own connectors: they know their default timeout (so that a retried send without a
/// timeout still has one deadline for all its attempts), and take a request whose rules the send
/// path has already checked without checking it again.
protocol ShippedConnector: Sendable {
    var defaultTimeout: Duration { get }
    /// Where the connector's logs and metrics go.
    var observability: Observability { get }
    /// Refuses, before any I/O, a request the connector's credential cannot carry (a certificate
    /// that does not cover its topic). Runs after ``APNsRequest/checkRules(for:)``.
    func checkCredential(for request: APNsRequest) throws(CredentialError)
    func performChecked(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse
    /// The transport thread as a task executor.
    var taskExecutor: any TaskExecutor { get }
}

extension ShippedConnector {
    /// Token connectors: a token covers every topic of its team.
    func checkCredential(for request: APNsRequest) throws(CredentialError) {}
}

/// What every send path checks before any I/O: the request against its push type's rules for the
/// connector's authentication, then against what a shipped connector's credential covers.
/// Returns the shipped connector inside `connector`, if any.
func checkBeforeSending(
    _ request: APNsRequest, via connector: some Connector
) throws(APNsError) -> (any ShippedConnector)? {
    do { try request.checkRules(for: connector.authenticationMethod) } catch { throw .validation(error) }
    let shipped = unwrapped(connector) as? any ShippedConnector
    do { try shipped?.checkCredential(for: request) } catch { throw .credential(error) }
    return shipped
}

/// Performs a request whose rules are checked, turning whatever the connector throws into an
/// ``APNsError``.
func perform(
    checked request: APNsRequest, via connector: some Connector, shipped: (any ShippedConnector)?,
    deadline: ContinuousClock.Instant?
) async throws(APNsError) -> APNsHTTPResponse {
    do {
        if let shipped {
            return try await shipped.performChecked(request, deadline: deadline ?? .now + shipped.defaultTimeout)
        }
        if let deadline { return try await connector.perform(request, deadline: deadline) }
        return try await connector.perform(request)
    } catch {
        throw APNsError(wrapping: error)
    }
}

/// Sends an already-built request through the one send path (deadline, retries, interpretation),
/// for the `apns` tool, which builds requests from command-line flags and files.
///
/// SPI: this has no compile-time rules (which push type may use which connector); the run-time
/// check of ``APNsRequest/checkRules(for:)`` applies as on every send.
@_spi(RawRequests)
public func send(
    request: APNsRequest, via connector: some Connector, timeout: Duration? = nil, retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    try await deliver(nil, via: connector, timeout: timeout, retry: retry) { () throws(APNsValidationError) in request }
}
