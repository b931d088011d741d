import Foundation

/// Broadcasts a Live Activity update or end to every subscriber of a channel, through a token
/// connector (<doc:ProtocolReference#Broadcast-channels>).
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
    _ notification: Notification, via connector: Via, to channel: BroadcastChannel, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.validatedRequest(to: channel)
    }
}

/// Broadcasts a Live Activity update or end to every subscriber of a channel, through a
/// certificate connector (<doc:ProtocolReference#Broadcast-channels>).
///
/// ```swift
/// try await send(LiveActivityNotification(bundleID: "com.example.game", end: final, timestamp: .now),
///                via: certificateConnector, to: channel)
/// ```
/// - Returns: APNs' acceptance, with `apns-request-id` and `apns-unique-id`.
/// - Throws: ``APNsError``.
@discardableResult
public func send<Notification: BroadcastDeliverable & CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to channel: BroadcastChannel, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.validatedRequest(to: channel)
    }
}

/// Broadcasts a Live Activity update or end through a connector chosen at run time; the push
/// type's rules for its authentication are checked before any I/O.
///
/// ```swift
/// try await send(update, via: AnyConnector(connector), to: channel)
/// ```
/// - Returns: APNs' acceptance, with `apns-request-id` and `apns-unique-id`.
/// - Throws: ``APNsError``.
@discardableResult
public func send<Notification: BroadcastDeliverable>(
    _ notification: Notification, via connector: AnyConnector, to channel: BroadcastChannel, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.validatedRequest(to: channel)
    }
}

/// Creates, reads, deletes and lists an app's broadcast channels on the management host of the
/// connector's environment (<doc:ProtocolReference#Broadcast-channels>).
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
    /// The connector the management requests go through.
    public let connector: Via

    /// Channel management through `connector` (token or certificate, as Apple allows both).
    public init(_ connector: Via) { self.connector = connector }

    /// Creates a channel; APNs answers 201 with its id.
    /// - Throws: ``APNsError``: a rejection (e.g. `cannotCreateChannelConfig` at 10,000 channels),
    ///   or a transport failure (`protocolError`, delivery unknown) if APNs returned no channel id.
    public func create(
        bundleID: String, storagePolicy: MessageStoragePolicy, requestID: APNsID? = nil
    ) async throws(APNsError) -> BroadcastChannel {
        let response = try await perform { () throws(APNsValidationError) in
            try ChannelRequest.create(bundleID: bundleID, storagePolicy: storagePolicy, requestID: requestID)
        }
        guard let id = response[header: .apnsChannelID] else {
            throw ChannelManager.unexpected(ChannelResponseError(body: response.body))
        }
        do { return try BroadcastChannel(id: id, bundleID: bundleID, storagePolicy: storagePolicy) } catch {
            throw ChannelManager.unexpected(ChannelResponseError(body: Array(id.utf8)))
        }
    }

    /// Reads a channel's storage policy and push type.
    /// - Throws: ``APNsError`` (a rejection: `channelNotRegistered`, `badChannelId`, …).
    public func read(_ channel: BroadcastChannel, requestID: APNsID? = nil) async throws(APNsError) -> ChannelInfo {
        let response = try await perform { () throws(APNsValidationError) in
            try ChannelRequest.read(channel, requestID: requestID)
        }
        do { return try ChannelInfo(decoding: response.body) } catch { throw ChannelManager.unexpected(error) }
    }

    /// Deletes a channel; APNs answers 204.
    public func delete(_ channel: BroadcastChannel, requestID: APNsID? = nil) async throws(APNsError) {
        _ = try await perform { () throws(APNsValidationError) in
            try ChannelRequest.delete(channel, requestID: requestID)
        }
    }

    /// Every channel of the app in this environment.
    public func list(bundleID: String, requestID: APNsID? = nil) async throws(APNsError) -> [BroadcastChannel] {
        let response = try await perform { () throws(APNsValidationError) in
            try ChannelRequest.list(bundleID: bundleID, requestID: requestID)
        }
        do {
            return try ChannelRequest.channelIDs(fromListBody: response.body).map { id throws -> BroadcastChannel in
                try BroadcastChannel(id: id, bundleID: bundleID)
            }
        } catch {
            throw ChannelManager.unexpected(ChannelResponseError(body: response.body))
        }
    }

    /// An answer APNs' API does not give: the request may have taken effect.
    private static func unexpected(_ error: ChannelResponseError) -> APNsError {
        .transport(TransportError(kind: .protocolError, delivery: .unknown, message: error.description))
    }

    /// Sends `request`; a non-2xx answer throws its rejection, every failure as an ``APNsError``.
    private func perform(
        _ build: () throws(APNsValidationError) -> APNsRequest
    ) async throws(APNsError) -> APNsHTTPResponse {
        let request: APNsRequest
        do { request = try build() } catch { throw .validation(error) }
        let engine = APNs.engine(of: connector)
        try checkBeforeSending(request, via: connector, engine: engine)
        let exchange = try await APNs.exchange(checked: request, via: connector, engine: engine, deadline: nil)
        if case .failure(let rejection) = exchange.answer { throw .rejected(rejection) }
        return exchange.response
    }
}
