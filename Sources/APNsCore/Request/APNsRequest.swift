/// One exact HTTP/2 request to APNs: method, path, ordered headers and body bytes.
///
/// Built once, by the notification (``PushNotification/request(to:)``); the transport, the
/// recording connector, `apns send --dry-run` and tests all read this value, so what a test asserts
/// is what goes on the wire. The host comes from the connector's environment and ``service``.
public struct APNsRequest: Hashable, Sendable, CustomStringConvertible {
    /// An HTTP method. An open set: APNs uses POST, GET and DELETE.
    public struct Method: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public static let post = Method("POST")
        public static let get = Method("GET")
        public static let delete = Method("DELETE")
        public var description: String { rawValue }
    }

    /// Which APNs host serves the request (APNs reference §1).
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
        public let name: String
        public let value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
        public var description: String { "\(name): \(value)" }
    }

    public var method: Method
    public var service: Service
    public var path: String
    /// In the order they are sent.
    public var headers: [Header]
    public var body: [UInt8]

    public init(method: Method, service: Service, path: String, headers: [Header], body: [UInt8]) {
        self.method = method
        self.service = service
        self.path = path
        self.headers = headers
        self.body = body
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
