/// One exact HTTP/2 request to APNs: method, path, ordered headers and body bytes.
///
/// Built once, by the notification (``PushNotification/request(to:)``); the transport, the
/// recording connector, `apns send --dry-run` and tests all read this value, so what a test asserts
/// is what goes on the wire. The host comes from the connector's environment and ``service``.
///
/// Two requests are equal when their method, service, path, headers and body are.
public struct APNsRequest: Hashable, Sendable, CustomStringConvertible {
    /// An HTTP method. An open set: APNs uses POST, GET and DELETE.
    public struct Method: Hashable, Sendable, CustomStringConvertible {
        /// The method's name, as sent in `:method`.
        public let rawValue: String
        /// A method by name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// `POST`: pushes, broadcasts and channel creation.
        public static let post = Method("POST")
        /// `GET`: reading and listing channels.
        public static let get = Method("GET")
        /// `DELETE`: deleting a channel.
        public static let delete = Method("DELETE")
        /// A readable form for logs and test failures; it never contains a secret.
        public var description: String { rawValue }
    }

    /// Which APNs host serves the request (<doc:ProtocolReference#Hosts-and-connections>).
    public enum Service: Hashable, Sendable {
        /// Device pushes: `api[.sandbox].push.apple.com`.
        case device
        /// Broadcast sends; the device host unless the environment names another.
        case broadcast
        /// Channel management: `api-manage-broadcast[.sandbox].push.apple.com`.
        case management
    }

    /// One header; names are lowercase, as HTTP/2 sends them.
    public struct Header: Hashable, Sendable, CustomStringConvertible {
        /// The header's name, lowercase.
        public let name: String
        /// The text, as sent.
        public let value: String
        /// A header; the name must be lowercase, as HTTP/2 sends it.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
        /// A readable form for logs and test failures; it never contains a secret.
        public var description: String { "\(name): \(value)" }
    }

    /// The HTTP method.
    public var method: Method
    /// Which APNs host serves it; the connector's environment gives the host.
    public var service: Service
    /// The `:path`, for example `/3/device/<token>`.
    public var path: String
    /// In the order they are sent.
    public var headers: [Header]
    /// The body bytes exactly as sent (UTF-8 JSON for pushes).
    public var body: [UInt8] {
        didSet { facts = nil }  // noted for the old body: read from the new one when needed
    }
    /// What the writer noted of the body's `aps` while writing it (nil for a body given as bytes).
    var facts: PayloadFacts?

    /// A request built by hand; notifications build theirs with `request(to:)`.
    public init(method: Method, service: Service, path: String, headers: [Header], body: [UInt8]) {
        self.method = method
        self.service = service
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// A request whose body a ``JSONWriter`` wrote, with what it noted.
    init(method: Method, service: Service, path: String, headers: [Header], writer: JSONWriter) {
        self.init(method: method, service: service, path: path, headers: headers, body: writer.bytes)
        facts = writer.facts
    }

    /// What the rules need to know of the body's `aps`: as noted while writing, or read from it.
    var payloadFacts: PayloadFacts { facts ?? PayloadFacts(parsing: body) }

    public static func == (lhs: APNsRequest, rhs: APNsRequest) -> Bool {
        lhs.method == rhs.method && lhs.service == rhs.service && lhs.path == rhs.path && lhs.headers == rhs.headers
            && lhs.body == rhs.body
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(service)
        hasher.combine(path)
        hasher.combine(headers)
        hasher.combine(body)
    }

    /// The value of the first header named `name` (lowercase), if any.
    public subscript(header name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    /// The body as UTF-8 text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// `METHOD path`, one `name: value` line per header, a blank line, the body: the format of
    /// `apns send --dry-run`.
    public var description: String {
        APNsRequest.text(method: method.rawValue, path: path, headers: headers, body: bodyText)
    }

    /// The one text form of a request, shared by ``description``, the mock server's records and
    /// the `apns` command: `METHOD path`, one `name: value` line per header in order, a blank line,
    /// the body.
    public static func text(method: String, path: String, headers: [Header], body: String) -> String {
        var lines = ["\(method) \(path)"]
        lines += headers.map(\.description)
        lines.append("")
        lines.append(body)
        return lines.joined(separator: "\n")
    }
}
