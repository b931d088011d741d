/// Sends a notification to a device through a token connector.
///
/// Compiles only when the push type accepts token authentication (every type but MDM).
///
/// ```swift
/// let response = try await send(
///     AlertNotification(bundleID: "com.example.app") { Alert("Hello") },
///     via: connector, to: try Device(token: deviceToken))
/// print(response.apnsID)
/// ```
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsValidationError`` before any I/O; ``APNsRejection`` when APNs refuses;
///   ``TransportError`` when no response came back; `CancellationError` when the task is cancelled.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device
) async throws -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(notification.request(to: device), via: connector)
}

/// Sends a notification to a device through a certificate connector.
///
/// Compiles only when the push type accepts certificate authentication (not location,
/// fileprovider, widgets or controls).
///
/// ```swift
/// try await send(BackgroundNotification(bundleID: "com.example.app"), via: certificateConnector, to: device)
/// ```
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsValidationError`` before any I/O; ``APNsRejection`` when APNs refuses;
///   ``TransportError`` when no response came back; `CancellationError` when the task is cancelled.
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device
) async throws -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(notification.request(to: device), via: connector)
}

/// Performs a validated request and interprets the response: the one path every `send` shares.
func deliver(_ request: APNsRequest, via connector: some Connector) async throws -> APNsResponse {
    try APNsResponse(interpreting: await connector.perform(request))
}
