/// Carries requests to APNs with one way of authenticating.
///
/// swift-apns ships ``TokenConnector`` (JWT from a `.p8` key) and ``CertificateConnector`` (TLS
/// client certificate), and ``AnyConnector`` for one chosen from configuration; `APNsTesting` adds
/// a recording connector. `send(_:via:to:)` compiles only when the push type accepts the
/// connector's ``Authentication`` (<doc:ProtocolReference#Push-types>); through an ``AnyConnector`` the same rule is
/// checked at run time, before any I/O.
///
/// Every send checks the request against its push type's rules
/// (``APNsRequest/checkRules(for:)``) before it reaches `perform`, and swift-apns' own connectors
/// check again in `perform`, so calling `perform` directly cannot send what `send` refuses.
///
/// What an implementation must do:
/// - send `request` exactly: its method, path, headers in order and body, adding only its own
///   authentication header (`authorization` for tokens);
/// - return whatever HTTP response APNs gave, including rejections (non-2xx is not an error here);
/// - throw ``TransportError`` when no response was received, with ``TransportError/delivery``
///   ``Delivery/notSent`` only when no byte of the request left (anything else a connector throws
///   is reported as a transport failure whose delivery is unknown);
/// - give up at `deadline` when one is given;
/// - be safe to call from many tasks at once.
///
/// Code that sends through any token connector takes `some Connector<TokenAuthentication>`, so a
/// test can pass a recording connector where production passes a ``TokenConnector``:
///
/// ```swift
/// func sendShippingNotice(to device: Device, via connector: some Connector<TokenAuthentication>) async throws {
///     try await send(AlertNotification(bundleID: "com.example.app") { Alert("Shipped") }, via: connector, to: device)
/// }
/// ```
public protocol Connector<Authentication>: Sendable {
    /// ``TokenAuthentication`` or ``CertificateAuthentication`` (``RunTimeAuthentication`` for
    /// ``AnyConnector``).
    associatedtype Authentication: AuthenticationKind

    /// How this connector authenticates. Connectors whose ``Authentication`` is
    /// ``TokenAuthentication`` or ``CertificateAuthentication`` get it from the type.
    var authenticationMethod: AuthenticationMethod { get }

    /// Sends one request and returns the response APNs gave, within the connector's default
    /// timeout.
    func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse

    /// Sends one request and returns the response APNs gave, giving up at `deadline` with a
    /// ``TransportError/Kind-swift.struct/timeout``. The default ignores the deadline and calls
    /// ``perform(_:)``.
    func perform(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse

    /// How many requests the connector carries at once; bulk sends keep this many in flight by
    /// default, and a small reserve more waiting in the connector. swift-apns' connectors report
    /// their transport's capacity with every connection the pool may carry
    /// (`maximumConcurrentStreams × (maximumConnectionsPerHost + additionalConnectionsWhenSlow)`):
    /// what the connections open do not carry waits in the transport's queue; libcurl
    /// lowers it on the wire to the server's SETTINGS_MAX_CONCURRENT_STREAMS and queues the rest.
    var concurrencyLimit: Int { get }
}

extension Connector {
    /// The default: ignores the deadline and calls `perform(_:)`.
    public func perform(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse {
        try await perform(request)
    }
}

extension Connector where Authentication: FixedAuthenticationKind {
    /// How this connector authenticates, from its ``Authentication`` type.
    public var authenticationMethod: AuthenticationMethod { Authentication.method }
}

/// The way a connector authenticates, as a type, so `send` can check it at compile time.
public protocol AuthenticationKind: Sendable {}

/// An authentication known from the connector's type: token or certificate.
public protocol FixedAuthenticationKind: AuthenticationKind {
    /// How connectors of this kind authenticate.
    static var method: AuthenticationMethod { get }
}

/// Connectors that sign each request with a JWT (`authorization: bearer …`).
public enum TokenAuthentication: FixedAuthenticationKind {
    /// Token authentication.
    public static var method: AuthenticationMethod { .token }
}

/// Connectors that authenticate the TLS connection with a client certificate.
public enum CertificateAuthentication: FixedAuthenticationKind {
    /// Certificate authentication.
    public static var method: AuthenticationMethod { .certificate }
}

/// The authentication of an ``AnyConnector``: known only at run time, so sends through it check
/// the push type's rules at run time.
public enum RunTimeAuthentication: AuthenticationKind {}

/// The APNs hosts a connector talks to (<doc:ProtocolReference#Hosts-and-connections>).
///
/// ```swift
/// let live = APNsEnvironment.production
/// let local = APNsEnvironment.custom(host: "127.0.0.1", port: 8443)   // a mock server
/// ```
public struct APNsEnvironment: Hashable, Sendable, CustomStringConvertible {
    /// A host and port.
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        /// The host name or IP address.
        public var host: String
        /// The TCP port.
        public var port: Int
        /// A host and port.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        /// `https://host:port`, with IPv6 literals bracketed.
        public var baseURL: String {
            let shown = host.utf8.contains(UInt8(ascii: ":")) && !host.hasPrefix("[") ? "[\(host)]" : host
            return "https://\(shown):\(port)"
        }
        /// A readable form for logs and test failures; it never contains a secret.
        public var description: String { "\(host):\(port)" }
    }

    /// A name for logs: `sandbox`, `production` or yours.
    public var name: String
    /// Device pushes.
    public var device: Endpoint
    /// Broadcast sends (`/4/broadcasts/…`). Apple's samples also show `api-broadcast[.sandbox]…`;
    /// the default is the device host (<doc:ProtocolReference#Hosts-and-connections>).
    public var broadcast: Endpoint
    /// Broadcast channel management.
    public var management: Endpoint

    /// An environment with its own hosts; `broadcast` defaults to `device`.
    public init(name: String, device: Endpoint, broadcast: Endpoint? = nil, management: Endpoint) {
        self.name = name
        self.device = device
        self.broadcast = broadcast ?? device
        self.management = management
    }

    /// Development builds: `api.sandbox.push.apple.com:443`.
    public static let sandbox = APNsEnvironment(
        name: "sandbox",
        device: Endpoint(host: "api.sandbox.push.apple.com", port: 443),
        management: Endpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195))

    /// App Store and TestFlight builds: `api.push.apple.com:443`.
    public static let production = APNsEnvironment(
        name: "production",
        device: Endpoint(host: "api.push.apple.com", port: 443),
        management: Endpoint(host: "api-manage-broadcast.push.apple.com", port: 2196))

    /// One host and port for everything, for a mock server in tests.
    public static func custom(host: String, port: Int, name: String = "custom") -> APNsEnvironment {
        let endpoint = Endpoint(host: host, port: port)
        return APNsEnvironment(name: name, device: endpoint, management: endpoint)
    }

    /// The same environment on Apple's alternate port 2197 (for firewalls that block 443).
    public var usingAlternatePort: APNsEnvironment {
        var copy = self
        copy.device.port = 2197
        copy.broadcast.port = 2197
        return copy
    }

    func endpoint(for service: APNsRequest.Service) -> Endpoint {
        switch service {
        case .device: return device
        case .broadcast: return broadcast
        case .management: return management
        }
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { "\(name) (\(device))" }
}

extension Connector {
    /// 100, for connectors that do not say.
    public var concurrencyLimit: Int { 100 }
}
