#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A Live Activity broadcast channel (iOS 18): one push updates every activity subscribed to it
/// (<doc:ProtocolReference#Broadcast-channels>).
///
/// Only Live Activity update and end notifications can be sent to a channel; anything else does not
/// compile. Make one from channel management (`ChannelManager.create`) or from an id you stored:
///
/// ```swift
/// let channel = try BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.game",
///                                    storagePolicy: .noMessageStored)
/// try await send(LiveActivityNotification(bundleID: "com.example.game", update: state, timestamp: .now),
///                via: connector, to: channel)
/// ```
public struct BroadcastChannel: Hashable, Sendable, CustomStringConvertible {
    /// The channel id APNs assigned, base64.
    public let id: String
    /// The app's bundle id (without any suffix).
    public let bundleID: String
    /// The channel's storage policy, when known; a `.noMessageStored` channel refuses a non-zero
    /// expiration before any I/O.
    public var storagePolicy: MessageStoragePolicy?

    /// A channel from its id, as APNs returned it when the channel was created.
    ///
    /// - Throws: ``APNsError/validation(_:)`` with ``APNsValidationError/invalidChannelID(_:)``
    ///   unless `id` is base64: ``APNsError``, as `send` throws, so one `do`/`catch` holds both.
    public init(id: String, bundleID: String, storagePolicy: MessageStoragePolicy? = nil) throws(APNsError) {
        do { self = try BroadcastChannel(validatingID: id, bundleID: bundleID, storagePolicy: storagePolicy) } catch {
            throw .validation(error)
        }
    }

    /// ``init(id:bundleID:storagePolicy:)`` for code that throws validation errors only.
    package init(
        validatingID id: String, bundleID: String, storagePolicy: MessageStoragePolicy? = nil
    )
        throws(APNsValidationError)
    {
        guard BroadcastChannel.isBase64(id) else { throw .invalidChannelID(id) }
        self.id = id
        self.bundleID = bundleID
        self.storagePolicy = storagePolicy
    }

    /// Standard base64 with padding, as APNs issues channel ids.
    public static func isBase64(_ text: String) -> Bool { Base64.isStandard(text) }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { "\(bundleID) channel \(id)" }
}

/// Whether APNs keeps the most recent message of a channel for devices that were offline
/// (`message-storage-policy`, <doc:ProtocolReference#Broadcast-channels>).
public enum MessageStoragePolicy: Int, Hashable, Sendable, CaseIterable {
    /// 0: nothing is stored; pushes must have expiration 0.
    case noMessageStored = 0
    /// 1: the most recent message is kept (up to 8 hours).
    case mostRecentMessageStored = 1
}

/// A Live Activity event that may go to a broadcast channel: update and end (never start).
public protocol BroadcastableLiveActivityEvent: LiveActivityEventKind {}
extension LiveActivityEvent.Update: BroadcastableLiveActivityEvent {}
extension LiveActivityEvent.End: BroadcastableLiveActivityEvent {}

/// A notification that may be sent to a ``BroadcastChannel``: Live Activity update and end.
public protocol BroadcastDeliverable: PushNotification {}

extension LiveActivityNotification: BroadcastDeliverable where Event: BroadcastableLiveActivityEvent {}

extension BroadcastDeliverable {
    /// The exact request that broadcasts this notification to `channel`:
    /// `POST /4/broadcasts/apps/<bundle-id>` with `apns-channel-id`, `apns-push-type`,
    /// `apns-priority` and `apns-expiration` always present, `apns-request-id` when the
    /// notification has an apns-id, and no topic or collapse id (<doc:ProtocolReference#Broadcast-channels>).
    ///
    /// An unset expiration is sent as 0 (deliver now, store nothing), which every channel accepts.
    ///
    /// - Throws: ``APNsError/validation(_:)`` before any I/O: a collapse id (channels have none),
    ///   a non-zero expiration on a `.noMessageStored` channel, a payload over 5120 bytes.
    public func request(to channel: BroadcastChannel) throws(APNsError) -> APNsRequest {
        do { return try validatedRequest(to: channel) } catch { throw .validation(error) }
    }

    /// ``request(to:)`` for code that throws validation errors only (SPI: the send paths, the
    /// gateway).
    @_spi(Description) public func validatedRequest(
        to channel: BroadcastChannel
    ) throws(APNsValidationError)
        -> APNsRequest
    {
        try validateTopic(channel.bundleID)
        let pushType = Self.pushType
        guard let limit = pushType.maximumBroadcastPayloadSize else { throw .notBroadcastable(pushType) }
        if let suffix = pushType.topicSuffix, pushType.bundleID(fromTopic: channel.bundleID + suffix) == nil {
            throw .topicNotForPushType(pushType: pushType, topic: channel.bundleID)
        }
        guard collapseID == nil else { throw .collapseIDOnBroadcast }
        let expirationSeconds = expiration?.unixSeconds ?? 0
        if channel.storagePolicy == .noMessageStored, expirationSeconds != 0 {
            throw .expirationOnUnstoredChannel(expirationSeconds)
        }
        var writer = JSONWriter()
        try writePayload(to: &writer)
        guard writer.count <= limit else {
            throw .payloadTooLarge(pushType: pushType, size: writer.count, limit: limit)
        }
        var headers: [APNsRequest.Header] = [
            .init(.apnsChannelID, value: channel.id),
            .init(.apnsPushType, value: Self.pushType.rawValue),
            .init(.apnsPriority, value: pushPriority.description),
            .init(.apnsExpiration, value: String(expirationSeconds)),
        ]
        if let apnsID { headers.append(.init(.apnsRequestID, value: apnsID.description)) }
        return APNsRequest(
            method: .post, service: .broadcast, path: "/4/broadcasts/apps/" + channel.bundleID, headers: headers,
            writer: writer)
    }
}
