/// No response came back from APNs: connecting, TLS or the HTTP/2 exchange failed.
///
/// `code` is libcurl's `CURLcode` (see `libcurl-errors(3)`); `message` is libcurl's own detail.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: Int
    public var message: String

    public init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    /// A timeout (CURLE_OPERATION_TIMEDOUT).
    public var isTimeout: Bool { code == 28 }

    public var description: String {
        var text = "Transport failure (curl \(code)): \(message)."
        switch code {
        case 6: text += " Check the host name and DNS."
        case 7: text += " Nothing accepted the connection: check host, port and firewall (APNs also listens on 2197)."
        case 28: text += " Raise TransportConfiguration.requestTimeout or check the network."
        case 35, 56, 58: text += " TLS failed: check the client certificate and that it matches the environment."
        case 60: text += " The server certificate is not trusted: for a mock server, set TransportConfiguration.trustedCertificateAuthority to its CA."
        default: break
        }
        return text
    }

    /// The transport shut down (its connector was released) before the request finished.
    public static let shutDown = TransportError(code: -1, message: "the connector's transport was shut down")
    /// The server answered without HTTP/2; APNs requires it.
    public static let notHTTP2 = TransportError(code: -2, message: "the server did not negotiate HTTP/2 (ALPN h2)")
}
