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
///   - timeout: How long the send may take from now, however long it waits for a connection or a
///     free stream; nil uses the connector's `TransportConfiguration.requestTimeout`.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError``: ``APNsError/validation(_:)`` before any I/O; ``APNsError/rejected(_:)``
///   when APNs refuses; ``APNsError/transport(_:)`` when no answer came back (its delivery says
///   whether the notification may have been delivered), including cancellation and timeout.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(via: connector, timeout: timeout) { () throws(APNsValidationError) in try notification.request(to: device) }
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
///   - timeout: How long the send may take from now; nil uses the connector's default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError`` (see the token variant).
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(via: connector, timeout: timeout) { () throws(APNsValidationError) in try notification.request(to: device) }
}

/// Builds the request, performs it within the deadline and interprets the answer: the one path
/// every single send shares. Every failure leaves as an ``APNsError``.
func deliver(
    via connector: some Connector, timeout: Duration?, request build: () throws(APNsValidationError) -> APNsRequest
) async throws(APNsError) -> APNsResponse {
    let deadline = try deadline(after: timeout)
    let request: APNsRequest
    do { request = try build() } catch { throw .validation(error) }
    let response = try await perform(request, via: connector, deadline: deadline)
    do { return try APNsResponse(interpreting: response) } catch { throw .rejected(error) }
}

/// `now + timeout`, or nil for the connector's default; a timeout that is not positive is refused.
func deadline(after timeout: Duration?) throws(APNsError) -> ContinuousClock.Instant? {
    guard let timeout else { return nil }
    guard timeout > .zero else { throw .validation(.invalidTimeout(timeout)) }
    return .now + timeout
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
