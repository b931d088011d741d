import Foundation

/// Broadcasts a Live Activity update or end to every subscriber of a channel, through a token
/// connector (APNs reference §6).
///
/// Compiles only for `LiveActivityNotification` update and end; a start, or any other push type,
/// sent to a channel does not compile.
///
/// ```swift
/// let update = LiveActivityNotification(bundleID: "com.example.game", update: score, timestamp: .now)
/// let response = try await send(update, via: connector, to: channel)
/// print(response.requestID, response.uniqueID)
/// ```
/// - Returns: APNs' acceptance, with `apns-request-id` and `apns-unique-id`.
/// - Throws: ``APNsError``: validation before any I/O (collapse id, expiration on a no-storage
///   channel, over 5120 bytes), rejection, transport failure.
@discardableResult
public func send<Notification: BroadcastDeliverable & TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to channel: BroadcastChannel, timeout: Duration? = nil
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(via: connector, timeout: timeout) { () throws(APNsValidationError) in try notification.request(to: channel) }
}

/// Broadcasts a Live Activity update or end to every subscriber of a channel, through a
/// certificate connector (APNs reference §6).
///
/// ```swift
/// try await send(LiveActivityNotification(bundleID: "com.example.game", end: final, timestamp: .now),
///                via: certificateConnector, to: channel)
/// ```
/// - Returns: APNs' acceptance, with `apns-request-id` and `apns-unique-id`.
/// - Throws: ``APNsError``.
@discardableResult
public func send<Notification: BroadcastDeliverable & CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to channel: BroadcastChannel, timeout: Duration? = nil
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(via: connector, timeout: timeout) { () throws(APNsValidationError) in try notification.request(to: channel) }
}

/// Creates, reads, deletes and lists an app's broadcast channels on the management host of the
/// connector's environment (APNs reference §6).
///
/// ```swift
/// let channels = ChannelManager(connector)
/// let channel = try await channels.create(bundleID: "com.example.game", storagePolicy: .noMessageStored)
/// let info = try await channels.read(channel)          // policy and push type
/// let all = try await channels.list(bundleID: "com.example.game")
/// try await channels.delete(channel)
/// ```
///
/// Thread safety: `Sendable` when the connector is (all of swift-apns' are).
public struct ChannelManager<Via: Connector>: Sendable {
    public let connector: Via

    public init(_ connector: Via) { self.connector = connector }

    /// Creates a channel; APNs answers 201 with its id.
    /// - Throws: ``APNsRejection`` (e.g. `cannotCreateChannelConfig` at 10,000 channels),
    ///   ``ChannelResponseError`` if APNs returned no channel id.
    public func create(bundleID: String, storagePolicy: MessageStoragePolicy, requestID: APNsID? = nil) async throws -> BroadcastChannel {
        let response = try await perform(ChannelRequest.create(bundleID: bundleID, storagePolicy: storagePolicy, requestID: requestID))
        guard let id = response[header: "apns-channel-id"] else { throw ChannelResponseError(body: response.body) }
        return try BroadcastChannel(id: id, bundleID: bundleID, storagePolicy: storagePolicy)
    }

    /// Reads a channel's storage policy and push type.
    /// - Throws: ``APNsRejection`` (`channelNotRegistered`, `badChannelId`, …).
    public func read(_ channel: BroadcastChannel, requestID: APNsID? = nil) async throws -> ChannelInfo {
        let response = try await perform(ChannelRequest.read(channel, requestID: requestID))
        return try ChannelInfo(decoding: response.body)
    }

    /// Deletes a channel; APNs answers 204.
    public func delete(_ channel: BroadcastChannel, requestID: APNsID? = nil) async throws {
        _ = try await perform(ChannelRequest.delete(channel, requestID: requestID))
    }

    /// Every channel of the app in this environment.
    public func list(bundleID: String, requestID: APNsID? = nil) async throws -> [BroadcastChannel] {
        let response = try await perform(ChannelRequest.list(bundleID: bundleID, requestID: requestID))
        return try ChannelRequest.channelIDs(fromListBody: response.body).map { try BroadcastChannel(id: $0, bundleID: bundleID) }
    }

    /// Sends `request`; a non-2xx answer throws its rejection, every failure as an ``APNsError``.
    private func perform(_ request: APNsRequest) async throws(APNsError) -> HTTPResponse {
        let response = try await APNs.perform(request, via: connector, deadline: nil)
        do { _ = try APNsResponse(interpreting: response) } catch { throw .rejected(error) }
        return response
    }
}
