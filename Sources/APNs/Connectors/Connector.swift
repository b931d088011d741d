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
    /// default. swift-apns' connectors report their transport's capacity
    /// (`maximumConcurrentStreams × maximumConnectionsPerHost`); libcurl lowers it on the wire to
    /// the server's SETTINGS_MAX_CONCURRENT_STREAMS and queues the rest.
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

/// How the transport connects: timeouts, trust, connection and stream limits.
///
/// ```swift
/// let transport = TransportConfiguration(
///     requestTimeout: .seconds(10),
///     trustedCertificateAuthority: .pem(mockServer.certificateAuthorityPEM))  // tests only
/// ```
///
/// Values are checked when a connector is made: a timeout that is not positive, a limit below one,
/// an idle time or keepalive under a second, is an
/// ``APNsValidationError/invalidTransportSetting(name:value:)``.
public struct TransportConfiguration: Sendable, Hashable {
    /// The default deadline of one send, counted from the moment it is made, whether it waits in a
    /// queue, for a connection or for APNs' answer. `send(…, timeout:)` overrides it per send.
    public var requestTimeout: Duration
    /// The longest a TCP + TLS connect may take.
    public var connectTimeout: Duration
    /// The only CA trusted for the server certificate, replacing the system's roots. `nil` (the
    /// default) trusts the system's roots. Verification itself cannot be turned off.
    public var trustedCertificateAuthority: CredentialSource?
    /// Connections per host. One is what Apple recommends; more only when one connection's stream
    /// limit caps throughput.
    public var maximumConnectionsPerHost: Int
    /// The most streams libcurl opens on one connection; the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it further.
    public var maximumConcurrentStreams: Int
    /// How long an idle connection is kept for the next send (libcurl's own default, 118 s, would
    /// make the first push after a two-minute gap pay a new handshake). Apple asks providers to
    /// keep connections open.
    public var maximumIdleTime: Duration
    /// TCP keepalive probes on idle connections, so a peer or middlebox that vanished is noticed
    /// before the next push is written to it, and NAT mappings stay open; nil turns them off.
    /// HTTP/2 PING would check the connection end to end, but no libcurl writes one on an idle
    /// connection (7.80–8.9 cannot reach a multi handle's connections; 8.10–8.21 queue the PING
    /// until the next request): see the Reliability article.
    public var tcpKeepAliveInterval: Duration?
    /// Fail fast while the host is unreachable or the credentials are refused; nil turns it off.
    public var circuitBreaker: CircuitBreakerPolicy?
    /// How long sends in flight may take to finish when a service supervisor asks the connector
    /// to stop gracefully (the connector's `Service.run()`); then they are cancelled.
    public var shutdownGracePeriod: Duration
    /// Whether GOAWAY frames are logged (with their error code and last stream id) and counted
    /// (`apns.goaways`) when the connector has a logger at `notice` or a metrics factory. libcurl
    /// 7.88 reports a GOAWAY only on its verbose channel, which costs about 4 % more CPU per push;
    /// set `false` to save that (refused streams and new connections are still logged and counted).
    /// With neither a logger nor metrics, GOAWAYs are never watched and cost nothing.
    public var reportsGoAway: Bool = true
    /// Whether the connector's `Service.run()` keeps a connection to APNs open while it runs, so
    /// no send waits for a handshake: it opens one when `run()` starts, and again whenever none is
    /// left (the server closed it or sent GOAWAY, a keepalive failed) or the idle one is about to
    /// pass ``maximumIdleTime``. Nothing is written on it until a send; failures are retried after
    /// 1 s, doubling to 60 s, and count for the ``circuitBreaker`` like a send's. A connector that
    /// is not run as a service connects on its first send either way.
    public var keepsConnectionWarm: Bool = true

    /// Transport settings; every default is what a production sender wants.
    ///
    /// - Parameters:
    ///   - requestTimeout: Default deadline of a send, from when it is made (30 s).
    ///   - connectTimeout: Longest TCP + TLS connect (10 s).
    ///   - trustedCertificateAuthority: The only CA to trust (tests with a mock server); nil for the
    ///     system's roots.
    ///   - maximumConnectionsPerHost: Connections per host (1).
    ///   - maximumConcurrentStreams: Streams per connection (1000; the server may lower it).
    ///   - maximumIdleTime: How long an idle connection is kept (1 hour).
    ///   - tcpKeepAliveInterval: TCP keepalive on idle connections (30 s); nil for none.
    ///   - circuitBreaker: When to fail fast (``CircuitBreakerPolicy``); nil for never.
    ///   - shutdownGracePeriod: How long in-flight sends may finish on graceful shutdown (10 s).
    public init(
        requestTimeout: Duration = .seconds(30),
        connectTimeout: Duration = .seconds(10),
        trustedCertificateAuthority: CredentialSource? = nil,
        maximumConnectionsPerHost: Int = 1,
        maximumConcurrentStreams: Int = 1000,
        maximumIdleTime: Duration = .seconds(60 * 60),
        tcpKeepAliveInterval: Duration? = .seconds(30),
        circuitBreaker: CircuitBreakerPolicy? = CircuitBreakerPolicy(),
        shutdownGracePeriod: Duration = .seconds(10)
    ) {
        self.shutdownGracePeriod = shutdownGracePeriod
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.trustedCertificateAuthority = trustedCertificateAuthority
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.maximumConcurrentStreams = maximumConcurrentStreams
        self.maximumIdleTime = maximumIdleTime
        self.tcpKeepAliveInterval = tcpKeepAliveInterval
        self.circuitBreaker = circuitBreaker
    }

    /// Throws for a value no transport can use.
    func validate() throws(APNsError) {
        func reject(_ name: String, _ value: String) -> APNsError {
            .validation(.invalidTransportSetting(name: name, value: value))
        }
        guard requestTimeout > .zero else { throw reject("requestTimeout", "\(requestTimeout)") }
        guard connectTimeout > .zero else { throw reject("connectTimeout", "\(connectTimeout)") }
        guard maximumConnectionsPerHost >= 1 else {
            throw reject("maximumConnectionsPerHost", "\(maximumConnectionsPerHost)")
        }
        guard maximumConcurrentStreams >= 1 else {
            throw reject("maximumConcurrentStreams", "\(maximumConcurrentStreams)")
        }
        guard shutdownGracePeriod >= .zero else { throw reject("shutdownGracePeriod", "\(shutdownGracePeriod)") }
        guard maximumIdleTime >= .seconds(1) else { throw reject("maximumIdleTime", "\(maximumIdleTime)") }
        if let tcpKeepAliveInterval, tcpKeepAliveInterval < .seconds(1) {
            throw reject("tcpKeepAliveInterval", "\(tcpKeepAliveInterval)")
        }
        if let breaker = circuitBreaker {
            guard breaker.failureThreshold >= 1 else {
                throw reject("circuitBreaker.failureThreshold", "\(breaker.failureThreshold)")
            }
            guard breaker.initialCoolDown > .zero, breaker.maximumCoolDown >= breaker.initialCoolDown else {
                throw reject("circuitBreaker cool-downs", "\(breaker.initialCoolDown)…\(breaker.maximumCoolDown)")
            }
        }
    }
}
