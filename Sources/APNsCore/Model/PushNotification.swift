/// What every push type shares: its push type, topic, priority, expiration, collapse id, apns-id
/// and payload.
///
/// You don't conform your own types to this protocol: swift-apns provides one generic struct per
/// APNs push type (``AlertNotification``, ``BackgroundNotification``, …), each of which exposes
/// only what Apple allows for that type. Use the protocol to write code that works with any of them:
///
/// ```swift
/// func preview(_ notification: some PushNotification, for device: Device) throws -> String {
///     try notification.request(to: device).description
/// }
/// ```
public protocol PushNotification: Sendable {
    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    static var pushType: PushType { get }
    /// The `apns-topic` header value (bundle id plus the type's suffix).
    var topic: String { get }
    /// The `apns-priority` header value.
    var pushPriority: PushPriority { get }
    /// The `apns-expiration` header value; `nil` sends none, which leaves storage to Apple's
    /// policy.
    var expiration: Expiration? { get }
    /// The `apns-collapse-id` header value (at most 64 bytes); `nil` sends none.
    var collapseID: CollapseID? { get }
    /// The `apns-id` header value; `nil` lets APNs assign one (returned in the response).
    var apnsID: APNsID? { get }
    /// Checks the rules types cannot express, then writes the JSON body.
    func writePayload(to writer: inout JSONWriter) throws(APNsValidationError)
}

/// A push type addressed to an app by its bundle id — every push type but MDM, whose topic is its
/// certificate's. Its ``PushNotification/topic`` is the bundle id and the push type's suffix,
/// written here once for all of them.
public protocol BundleAddressed: PushNotification {
    /// The app's bundle id, without any push-type suffix (swift-apns appends it).
    var bundleID: String { get }
}

extension BundleAddressed {
    /// The `apns-topic` header value: the bundle id plus this push type's suffix.
    public var topic: String { Self.pushType.topic(forBundleID: bundleID) }
}

/// A push type whose priority is 10 or 5 (``StandardPriority``): its ``PushNotification/pushPriority``
/// is the chosen one, written here once for all of them.
public protocol StandardPrioritized: PushNotification {
    /// The `apns-priority`: `.immediate` (10) or `.powerConsiderate` (5).
    var priority: StandardPriority { get }
}

extension StandardPrioritized {
    /// The `apns-priority` header value.
    public var pushPriority: PushPriority { priority.pushPriority }
}

/// A push type that a token (JWT, `.p8` key) connector may send.
public protocol TokenDeliverable: PushNotification {}

/// A push type that a TLS client-certificate connector may send.
public protocol CertificateDeliverable: PushNotification {}

extension PushNotification {
    /// The JSON body exactly as it would be sent.
    /// - Throws: ``APNsError/validation(_:)`` for anything APNs would reject, including an
    ///   oversize payload.
    public func payload() throws(APNsError) -> [UInt8] {
        do { return try writer().bytes } catch { throw .validation(error) }
    }

    /// The writer that wrote the payload, checked against the push type's size limit.
    func writer() throws(APNsValidationError) -> JSONWriter {
        var writer = JSONWriter()
        try writePayload(to: &writer)
        let size = writer.count
        let limit = Self.pushType.maximumPayloadSize
        guard size <= limit else { throw .payloadTooLarge(pushType: Self.pushType, size: size, limit: limit) }
        return writer
    }

    /// The exact request that sends this notification to `device`: method, path, ordered headers
    /// and body. `send(_:via:to:)` sends this value; it is also what tests and `apns send --dry-run`
    /// look at. The connector adds `authorization` on token connections.
    ///
    /// ```swift
    /// let request = try notification.request(to: Device(token: "00fc13adff78"))
    /// print(request)   // POST /3/device/00fc13adff78, the headers, the body
    /// ```
    /// - Throws: ``APNsError/validation(_:)`` before anything is sent: the error type of `send`,
    ///   so one `do`/`catch` holds both.
    public func request(to device: Device) throws(APNsError) -> APNsRequest {
        do { return try request(path: device.path) } catch { throw .validation(error) }
    }

    /// ``request(to:)`` for code that throws validation errors only (SPI: the send paths, the
    /// gateway).
    @_spi(Description) public func validatedRequest(to device: Device) throws(APNsValidationError) -> APNsRequest {
        try request(path: device.path)
    }

    /// The request to `path`; a bulk send builds it once with an empty path, which each device's
    /// request replaces with its own.
    func request(path: String) throws(APNsValidationError) -> APNsRequest {
        try validateTopic(topic)
        if Self.pushType.bundleID(fromTopic: topic) == nil {
            throw Self.pushType == .mdm
                ? .invalidMDMTopic(topic) : .topicNotForPushType(pushType: Self.pushType, topic: topic)
        }
        var headers: [APNsRequest.Header] = [
            .init(.apnsPushType, value: Self.pushType.rawValue),
            .init(.apnsTopic, value: topic),
            .init(.apnsPriority, value: pushPriority.description),
        ]
        if let expiration { headers.append(.init(.apnsExpiration, value: expiration.description)) }
        if let apnsID { headers.append(.init(.apnsID, value: apnsID.description)) }
        if let collapseID {
            try collapseID.validate()
            headers.append(.init(.apnsCollapseID, value: collapseID.value))
        }
        return APNsRequest(method: .post, service: .device, path: path, headers: headers, writer: try writer())
    }
}

/// Checks a topic the way <doc:ProtocolReference#Push-types> describes bundle ids: ASCII letters, digits, `-`, `.`
/// (and `_`, which MDM UIDs may contain), not empty.
func validateTopic(_ topic: String) throws(APNsValidationError) {
    guard !topic.isEmpty,
        topic.utf8.allSatisfy({ byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                return true
            default: return false
            }
        })
    else { throw .invalidTopic(topic) }
}
