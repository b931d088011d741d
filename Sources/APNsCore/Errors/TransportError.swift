/// No answer came back from APNs: connecting, TLS or the HTTP/2 exchange failed, the send's deadline
/// passed, it was cancelled, or the connector shut down.
///
/// ``delivery`` says what the caller may conclude: ``Delivery/notSent`` is proof that no byte of the
/// request reached a server (sending it again cannot duplicate it); ``Delivery/unknown`` means the
/// request was written to a connection that then failed, so APNs may have accepted it and the device
/// may show it — retry only where a duplicate is acceptable.
///
/// ```swift
/// do {
///     try await send(notification, via: connector, to: device)
/// } catch .transport(let failure) where failure.delivery == .notSent {
///     try await send(notification, via: connector, to: device)   // safe: it never left
/// }
/// ```
///
/// `description` names the kind, the delivery and what to do; it never contains credentials.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed. An open set: match the static members, keep `default` for kinds added later.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as logged.
        public let rawValue: String
        /// A kind by name (an open set).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A readable form for logs and test failures; it never contains a secret.
        public var description: String { rawValue }

        /// The host name did not resolve.
        public static let dns = Kind(rawValue: "dns")
        /// Nothing accepted the TCP connection.
        public static let connect = Kind(rawValue: "connect")
        /// The TLS handshake failed or the server's certificate is not trusted.
        public static let tls = Kind(rawValue: "tls")
        /// The server did not negotiate HTTP/2 (ALPN `h2`), which APNs requires.
        public static let notHTTP2 = Kind(rawValue: "not-http2")
        /// The proxy between the connector and APNs (``TransportConfiguration/proxy``, or the one
        /// `https_proxy` names) could not be reached or refused the tunnel.
        public static let proxy = Kind(rawValue: "proxy")
        /// The connection failed (reset, closed, broken) while the request was on it.
        public static let connectionLost = Kind(rawValue: "connection-lost")
        /// The server broke the HTTP/2 protocol or reset the stream with an error.
        public static let protocolError = Kind(rawValue: "protocol")
        /// The send's deadline passed before an answer came.
        public static let timeout = Kind(rawValue: "timeout")
        /// The calling task was cancelled, or the bulk send it belongs to was.
        public static let cancelled = Kind(rawValue: "cancelled")
        /// The connector was shut down (``TransportConnector/shutdown(gracePeriod:)``).
        public static let shutDown = Kind(rawValue: "shut-down")
        /// The connector's circuit breaker is open: recent sends failed in a way the next would
        /// repeat (credentials refused, host unreachable), so this one was not tried.
        public static let circuitOpen = Kind(rawValue: "circuit-open")
        /// The libcurl this process loaded cannot keep swift-apns' promises: older than 7.80.0,
        /// built without HTTP/2, or it refused an option a guarantee rests on. Thrown when a
        /// connector is made, before anything is sent.
        public static let unsupportedLibcurl = Kind(rawValue: "unsupported-libcurl")
        /// Anything else libcurl or a custom connector reported.
        public static let other = Kind(rawValue: "other")
    }

    /// What failed.
    public var kind: Kind
    /// Whether the notification may have reached APNs.
    public var delivery: Delivery
    /// libcurl's `CURLcode` (see `libcurl-errors(3)`), when libcurl reported the failure.
    public var curlCode: Int?
    /// libcurl's or the connector's own detail.
    public var message: String

    /// A transport failure; connectors of your own throw one when no answer came back.
    public init(kind: Kind, delivery: Delivery, curlCode: Int? = nil, message: String) {
        self.kind = kind
        self.delivery = delivery
        self.curlCode = curlCode
        self.message = message
    }

    /// A timeout.
    public var isTimeout: Bool { kind == .timeout }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        var text = "Transport failure (\(kind)"
        if let curlCode { text += ", curl \(curlCode)" }
        text += "): \(message). "
        switch delivery {
        case .notSent: text += "The notification was not sent; sending it again cannot duplicate it."
        case .unknown:
            text += "The notification may have been delivered; send it again only if a duplicate is acceptable."
        }
        switch kind {
        case .dns: text += " Check the host name and DNS."
        case .connect:
            text += " Nothing accepted the connection: check host, port and firewall (APNs also listens on 2197)."
        case .tls:
            text +=
                " TLS failed: check the client certificate, that it matches the environment, and the trusted CA (for a mock server, TransportConfiguration.trustedCertificateAuthority)."
        case .proxy:
            text +=
                " Check TransportConfiguration.proxy (or https_proxy and no_proxy in the environment): its address, its credentials, and that it allows a tunnel to APNs' port 443 (or 2197)."
        case .notHTTP2: text += " The server must offer HTTP/2 over TLS (ALPN h2), as APNs does."
        case .timeout:
            text += " Raise the send's timeout or TransportConfiguration.requestTimeout, or check the network."
        case .circuitOpen:
            text += " Fix the cause reported by the earlier failures; the connector probes again after its cool-down."
        case .shutDown: text += " The connector was shut down: create a new one."
        default: break
        }
        return text
    }

    /// The connector was shut down before the request was written.
    static func shutDown(delivery: Delivery) -> TransportError {
        TransportError(kind: .shutDown, delivery: delivery, message: "the connector's transport was shut down")
    }

    /// The deadline passed.
    static func timedOut(delivery: Delivery, curlCode: Int? = nil) -> TransportError {
        TransportError(
            kind: .timeout, delivery: delivery, curlCode: curlCode,
            message: "the send's deadline passed before APNs answered")
    }

    /// The request waited (for a stream or a connection) until too little of its time was left for
    /// an answer, and was not written.
    static let tooLateToWrite = TransportError(
        kind: .timeout, delivery: .notSent,
        message: "the request waited for a stream or a connection until too little time was left for an answer")

    /// Cancelled by the caller.
    static func cancelled(delivery: Delivery) -> TransportError {
        TransportError(kind: .cancelled, delivery: delivery, message: "the send was cancelled")
    }

    /// The connection chose a protocol other than HTTP/2 and the request was stopped before it was written.
    static let notHTTP2NothingWritten = TransportError(
        kind: .notHTTP2, delivery: .notSent,
        message: "the server did not negotiate HTTP/2 (ALPN h2); nothing was written")

    /// The request was written and its connection closed before APNs answered; `then` is what
    /// libcurl reported last, when it is not that failure itself.
    static func connectionLost(curlCode: Int, then: String? = nil) -> TransportError {
        let message = "the connection failed after the request was written and before APNs answered"
        return TransportError(
            kind: .connectionLost, delivery: .unknown, curlCode: curlCode,
            message: then.map { message + " (then: \($0))" } ?? message)
    }
}

/// Whether a failed notification may have been delivered.
public enum Delivery: String, Hashable, Sendable, CustomStringConvertible {
    /// Provably not delivered: no byte of the request reached a server, or the server refused the
    /// stream before processing it (HTTP/2 REFUSED_STREAM, or GOAWAY with a lower last-stream-id).
    /// Sending it again cannot produce a duplicate.
    case notSent = "not-sent"
    /// The request was written to a connection that failed before the answer arrived: APNs may have
    /// accepted it. Sending again may show the notification twice.
    case unknown

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { rawValue }
}
