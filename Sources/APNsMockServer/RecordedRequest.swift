import APNs
import Foundation

/// One request the mock server received, exactly as it arrived, and how it answered.
public struct RecordedRequest: Sendable, Hashable, CustomStringConvertible {
    /// How the connection authenticated.
    public enum Authentication: Sendable, Hashable {
        /// A bearer token that verified, with its ids and `iat`.
        case token(teamID: String, keyID: String, issuedAt: Int)
        /// A TLS client certificate, with its common name.
        case certificate(commonName: String)
        /// Neither (or a token that did not verify).
        case none
    }

    public let method: String
    public let path: String
    public let authority: String
    /// Regular (non-pseudo) headers in the order received, names lowercase.
    public let headers: [APNsRequest.Header]
    public let body: [UInt8]
    public let authentication: Authentication
    /// The status the mock server answered with.
    public let status: Int
    /// The reason it gave, for rejections.
    public let reason: String?
    /// The headers it answered with (`apns-id`, `apns-unique-id`, `apns-request-id`, `apns-channel-id`).
    public let responseHeaders: [APNsRequest.Header]
    /// The address the request came from, as the server saw it (`127.0.0.1:54321`): the client's,
    /// or a proxy's when the client went through one.
    public let remoteAddress: String?
    /// When the server answered it, on its clock (``MockAPNsServer/Configuration/clock``).
    public let receivedAt: Date
    /// The fault that dealt with it instead of the server's judgment (``MockAPNsServer/Fault``'s
    /// description: "503 retry-after 30", "RST_STREAM 2"…), or nil when the server judged it. A
    /// request a fault dealt with is in ``MockAPNsServer/receivedRequests`` (the console lists it)
    /// but not in ``MockAPNsServer/requests``, which holds what the server judged; its
    /// ``authentication`` is `.none` (never checked) and its ``status`` 0 when it was not answered.
    public let fault: String?

    /// The apns-id it answered with.
    public var apnsID: String? { responseHeaders.first(where: { $0.name == "apns-id" })?.value }

    public subscript(header name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The request in `apns send --dry-run` form, then the answer.
    public var description: String {
        APNsRequest.text(method: method, path: path, headers: headers, body: bodyText) + "\n→ \(status)"
            + (reason.map { " \($0)" } ?? "") + (fault.map { " (fault: \($0))" } ?? "")
    }
}
