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
///   - timeout: How long the send may take from now, retries included, however long it waits for a
///     connection or a free stream; nil uses the connector's `TransportConfiguration.requestTimeout`.
///   - retry: When to try again on its own (``RetryPolicy``); none by default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError``: ``APNsError/validation(_:)`` before any I/O; ``APNsError/rejected(_:)``
///   when APNs refuses; ``APNsError/transport(_:)`` when no answer came back (its delivery says
///   whether the notification may have been delivered), including cancellation and timeout.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil, retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(via: connector, timeout: timeout, retry: retry) { () throws(APNsValidationError) in try notification.request(to: device) }
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
///   - timeout: How long the send may take from now, retries included; nil uses the connector's
///     default.
///   - retry: When to try again on its own (``RetryPolicy``); none by default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError`` (see the token variant).
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil, retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(via: connector, timeout: timeout, retry: retry) { () throws(APNsValidationError) in try notification.request(to: device) }
}

/// Builds the request, performs it within the deadline (retrying as the policy allows) and
/// interprets the answer: the one path every single send shares. Every failure leaves as an
/// ``APNsError``.
func deliver(
    via connector: some Connector, timeout: Duration?, retry: RetryPolicy = .none,
    request build: () throws(APNsValidationError) -> APNsRequest
) async throws(APNsError) -> APNsResponse {
    try retry.validate()
    let deadline = try deadline(after: timeout, via: connector, retry: retry)
    let request: APNsRequest
    do { request = try build() } catch { throw .validation(error) }
    let response = try await attempt(request, via: connector, deadline: deadline, retry: retry).get()
    do { return try APNsResponse(interpreting: response) } catch { throw .rejected(error) }
}

/// The send's deadline: `now + timeout`; without a timeout, nil (each connector applies its own),
/// except that retries need one deadline for all attempts — the connector's default. A timeout
/// that is not positive is refused.
func deadline(after timeout: Duration?, via connector: some Connector, retry: RetryPolicy) throws(APNsError) -> ContinuousClock.Instant? {
    if let timeout, timeout <= .zero { throw .validation(.invalidTimeout(timeout)) }
    return deadline(afterValid: timeout, via: connector, retry: retry)
}

/// ``deadline(after:via:retry:)`` for a timeout already checked.
func deadline(afterValid timeout: Duration?, via connector: some Connector, retry: RetryPolicy) -> ContinuousClock.Instant? {
    if let timeout { return .now + timeout }
    guard retry.maximumAttempts > 1 else { return nil }
    return .now + ((connector as? any DefaultTimeout)?.defaultTimeout ?? .seconds(30))
}

/// Performs `request`, and again while `retry` allows and the deadline leaves room. An HTTP answer
/// is returned as it is (a retryable rejection's last answer included); a failure as an
/// ``APNsError``.
func attempt(
    _ request: APNsRequest, via connector: some Connector, deadline: ContinuousClock.Instant?, retry: RetryPolicy
) async -> Result<HTTPResponse, APNsError> {
    var attempt = 1
    while true {
        let result: Result<HTTPResponse, APNsError>
        let failure: APNsError?
        do {
            let response = try await perform(request, via: connector, deadline: deadline)
            result = .success(response)
            failure = (200..<300).contains(response.status) ? nil : .rejected(APNsRejection(response))
        } catch {
            result = .failure(error)
            failure = error
        }
        guard let failure, let delay = retry.delay(after: failure, attempt: attempt) else { return result }
        if let deadline, ContinuousClock.now + delay >= deadline { return result }
        do {
            try await Task.sleep(for: delay)
        } catch {
            return .failure(.transport(.cancelled(delivery: .notSent)))
        }
        attempt += 1
    }
}

/// Connectors that know their default timeout (swift-apns' own), so that a retried send without a
/// timeout still has one deadline for all its attempts.
protocol DefaultTimeout {
    var defaultTimeout: Duration { get }
}

/// Performs `request`, turning whatever the connector throws into an ``APNsError``.
func perform(_ request: APNsRequest, via connector: some Connector, deadline: ContinuousClock.Instant?) async throws(APNsError) -> HTTPResponse {
    do {
        if let deadline { return try await connector.perform(request, deadline: deadline) }
        return try await connector.perform(request)
    } catch {
        throw APNsError(wrapping: error)
    }
}

/// Sends an already-built request through the one send path (deadline, retries, interpretation),
/// for the `apns` tool, which builds requests from command-line flags and files.
///
/// SPI: this skips the compile-time rules of `send(_:via:to:)` (which push type may use which
/// connector); the request must come from a push type's own `request(to:)`.
@_spi(RawRequests)
public func send(
    request: APNsRequest, via connector: some Connector, timeout: Duration? = nil, retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    try await deliver(via: connector, timeout: timeout, retry: retry) { () throws(APNsValidationError) in request }
}
