#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The exact requests of broadcast channel management (<doc:ProtocolReference#Broadcast-channels>), as values: what
/// `ChannelManager` sends and what tests assert.
///
/// ```swift
/// let request = try ChannelRequest.create(bundleID: "com.example.game", storagePolicy: .noMessageStored)
/// // POST /1/apps/com.example.game/channels
/// // {"message-storage-policy":0,"push-type":"LiveActivity"}
/// ```
public enum ChannelRequest {
    /// `POST /1/apps/<bundle>/channels` with `{"message-storage-policy":n,"push-type":"LiveActivity"}`.
    public static func create(
        bundleID: String, storagePolicy: MessageStoragePolicy, requestID: APNsID? = nil
    ) throws(APNsValidationError) -> APNsRequest {
        try validateTopic(bundleID)
        let body = #"{"message-storage-policy":"# + String(storagePolicy.rawValue) + #","push-type":"LiveActivity"}"#
        return APNsRequest(
            method: .post, service: .management, path: "/1/apps/\(bundleID)/channels",
            headers: requestIDHeader(requestID), body: Array(body.utf8))
    }

    /// `GET /1/apps/<bundle>/channels` with `apns-channel-id`.
    public static func read(
        _ channel: BroadcastChannel, requestID: APNsID? = nil
    ) throws(APNsValidationError) -> APNsRequest {
        try validateTopic(channel.bundleID)
        return APNsRequest(
            method: .get, service: .management, path: "/1/apps/\(channel.bundleID)/channels",
            headers: [.init(.apnsChannelID, value: channel.id)] + requestIDHeader(requestID), body: [])
    }

    /// `DELETE /1/apps/<bundle>/channels` with `apns-channel-id`.
    public static func delete(
        _ channel: BroadcastChannel, requestID: APNsID? = nil
    ) throws(APNsValidationError) -> APNsRequest {
        try validateTopic(channel.bundleID)
        return APNsRequest(
            method: .delete, service: .management, path: "/1/apps/\(channel.bundleID)/channels",
            headers: [.init(.apnsChannelID, value: channel.id)] + requestIDHeader(requestID), body: [])
    }

    /// `GET /1/apps/<bundle>/all-channels`.
    public static func list(bundleID: String, requestID: APNsID? = nil) throws(APNsValidationError) -> APNsRequest {
        try validateTopic(bundleID)
        return APNsRequest(
            method: .get, service: .management, path: "/1/apps/\(bundleID)/all-channels",
            headers: requestIDHeader(requestID), body: [])
    }

    /// The ids in a list answer, `{"channels":["<id>",…]}`.
    public static func channelIDs(fromListBody body: [UInt8]) throws(ChannelResponseError) -> [String] {
        struct Body: Decodable { var channels: [String] }
        guard let decoded = try? JSONDecoder().decode(Body.self, from: Data(body)) else {
            throw ChannelResponseError(body: body)
        }
        return decoded.channels
    }

    private static func requestIDHeader(_ id: APNsID?) -> [APNsRequest.Header] {
        id.map { [.init(.apnsRequestID, value: $0.description)] } ?? []
    }
}

/// What reading a channel returns.
public struct ChannelInfo: Hashable, Sendable {
    /// Whether the channel keeps its latest message.
    public var storagePolicy: MessageStoragePolicy
    /// `LiveActivity`, the only channel push type so far.
    public var pushType: String

    /// Channel information from its parts.
    public init(storagePolicy: MessageStoragePolicy, pushType: String) {
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }

    /// Decodes `{"message-storage-policy":n,"push-type":"LiveActivity"}`.
    public init(decoding body: [UInt8]) throws(ChannelResponseError) {
        struct Body: Decodable {
            var policy: Int
            var pushType: String
            enum CodingKeys: String, CodingKey {
                case policy = "message-storage-policy"
                case pushType = "push-type"
            }
        }
        guard let decoded = try? JSONDecoder().decode(Body.self, from: Data(body)),
            let policy = MessageStoragePolicy(rawValue: decoded.policy)
        else { throw ChannelResponseError(body: body) }
        self.init(storagePolicy: policy, pushType: decoded.pushType)
    }
}

/// APNs answered a channel request with success but a body or headers swift-apns cannot read.
public struct ChannelResponseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What APNs answered.
    public let body: [UInt8]
    /// The error for an answer that could not be read.
    public init(body: [UInt8]) { self.body = body }
    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        "APNs answered the channel request with an unexpected body: \(String(decoding: body.prefix(200), as: UTF8.self))"
    }
}
