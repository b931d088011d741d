extension APNsRequest.Header {
    /// A header name of APNs' protocol, spelled once: the request builders, the connectors, the
    /// transport, the CLI and your tests read these instead of repeating the text (as
    /// swift-http-types' `HTTPField.Name` does). Names are lowercase, as HTTP/2 sends them. What each
    /// header means: <doc:ProtocolReference#Device-requests>.
    ///
    /// ```swift
    /// let request = try notification.request(to: device)
    /// #expect(request[header: .apnsTopic] == "com.example.app")
    /// #expect(request[header: .apnsPushType] == "alert")
    /// ```
    ///
    /// The mock server spells the wire format itself, on purpose: it checks the library from
    /// outside rather than agreeing with it by construction.
    public struct Name: Hashable, Sendable, CustomStringConvertible {
        /// The name as sent, lowercase.
        public let rawValue: String

        init(_ rawValue: String) { self.rawValue = rawValue }

        /// The name as sent.
        public var description: String { rawValue }

        /// `apns-push-type`: the push type (`alert`, `background`, `liveactivity`, …).
        public static let apnsPushType = Name("apns-push-type")
        /// `apns-topic`: the bundle id, with the push type's suffix where it has one.
        public static let apnsTopic = Name("apns-topic")
        /// `apns-priority`: 10, 5 or 1.
        public static let apnsPriority = Name("apns-priority")
        /// `apns-expiration`: a UNIX time in seconds; 0 for deliver now or never.
        public static let apnsExpiration = Name("apns-expiration")
        /// `apns-id`: the notification's UUID, yours or the one APNs assigns (requests and responses).
        public static let apnsID = Name("apns-id")
        /// `apns-collapse-id`: notifications with the same one replace each other on the device.
        public static let apnsCollapseID = Name("apns-collapse-id")
        /// `apns-unique-id`: the sandbox's id for the delivery log (responses).
        public static let apnsUniqueID = Name("apns-unique-id")
        /// `apns-channel-id`: a broadcast channel (broadcast and channel requests and responses).
        public static let apnsChannelID = Name("apns-channel-id")
        /// `apns-request-id`: the id of a broadcast or channel request (requests and responses).
        public static let apnsRequestID = Name("apns-request-id")
        /// `authorization`: `bearer <JWT>` on token connections; never logged.
        public static let authorization = Name("authorization")
        /// `retry-after`: seconds to wait, on 429 and some 5xx answers (responses).
        public static let retryAfter = Name("retry-after")
        /// `content-type` (responses).
        public static let contentType = Name("content-type")
    }

    /// A header with one of APNs' names.
    ///
    /// ```swift
    /// let header = APNsRequest.Header(.apnsCollapseID, value: "order-42")
    /// ```
    public init(_ name: Name, value: String) {
        self.init(name: name.rawValue, value: value)
    }
}

extension APNsRequest {
    /// The value of the first header named `name`, if any.
    ///
    /// ```swift
    /// #expect(request[header: .apnsPriority] == "10")
    /// ```
    public subscript(header name: Header.Name) -> String? {
        self[header: name.rawValue]
    }
}

extension APNsHTTPResponse {
    /// The value of the first header named `name`, if any.
    ///
    /// ```swift
    /// let apnsID = response[header: .apnsID]
    /// ```
    public subscript(header name: APNsRequest.Header.Name) -> String? {
        self[header: name.rawValue]
    }
}
