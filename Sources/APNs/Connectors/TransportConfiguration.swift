/// How the transport connects: timeouts, trust, connection and stream limits.
///
/// ```swift
/// let transport = TransportConfiguration(
///     requestTimeout: .seconds(10),
///     trustedCertificateAuthority: .pem(mockServer.certificateAuthorityPEM))  // tests only
/// ```
///
/// Values are checked when a connector is made: a timeout that is not positive, a limit below one,
/// an idle time, keepalive or memory trim interval under a second, any duration over
/// ``maximumDuration`` (24 hours), more than ``maximumConnectionsLimit`` connections or
/// ``maximumStreamsLimit`` streams is an ``APNsValidationError/invalidTransportSetting(name:value:)``
/// that names the allowed range.
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
    /// limit caps throughput. Requests are spread evenly over them
    /// (<doc:Connectors#Sizing-a-pool-for-the-round-trip>). While every stream cycles slowly the
    /// pool may carry ``additionalConnectionsWhenSlow`` more.
    public var maximumConnectionsPerHost: Int
    /// Connections the pool may add beyond ``maximumConnectionsPerHost`` while every stream is busy
    /// and each takes well over a round trip per request (a server answering late, far away or
    /// busy): one is added when such a slow spell begins, and taken away once the demand has fit
    /// one connection fewer for ten seconds; after that none is added for a minute. 0 keeps the
    /// pool at ``maximumConnectionsPerHost`` always. Bulk sends keep enough in flight for the
    /// added connections too (``Connector/concurrencyLimit`` counts them). Why, and what it
    /// cannot tell apart: <doc:Connectors#A-pool-that-grows-when-the-server-answers-late>.
    public var additionalConnectionsWhenSlow: Int = 1
    /// The most streams libcurl opens on one connection; the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it further.
    public var maximumConcurrentStreams: Int
    /// How long a connection may stay idle and still carry the next send. One idle for longer is
    /// closed, not used: a connection left idle may have gone silent, with TCP still open, and a
    /// send written to it would wait out its whole deadline and end ``Delivery/unknown``. A sender
    /// that sends more often keeps its connection; keep-warm replaces an idle one at most once per
    /// idle period. Why this default, and not a PING: <doc:ProtocolReference#Hosts-and-connections>
    /// and <doc:Reliability>.
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
    /// 7.88 reports a GOAWAY only on its verbose channel, which costs CPU on every request (the
    /// benchmark's listening-logger row says how much); set `false` to save that (refused streams and new connections are still logged and counted).
    /// With neither a logger nor metrics, GOAWAYs are never watched and cost nothing. libcurl
    /// before 7.88 (Ubuntu 22.04's 7.81 among them) reports no GOAWAY at all: there this setting
    /// has no effect, and a GOAWAY shows only as the new connection that follows it.
    public var reportsGoAway: Bool = true
    /// Whether the connector's `Service.run()` keeps a connection to APNs open while it runs, so
    /// no send waits for a handshake: it opens one when `run()` starts, and again whenever none is
    /// left (the server closed it or sent GOAWAY, a keepalive failed) or the idle one has passed
    /// ``maximumIdleTime`` — once per idle period: a replacement that stays idle as long is left
    /// for the next send to replace, so a connector idle for hours does not open a connection every
    /// few seconds. Nothing is written on it until a send; failures are retried after
    /// 1 s, doubling to 60 s, and count for the ``circuitBreaker`` like a send's. A connector that
    /// is not run as a service connects on its first send either way.
    ///
    /// It needs libcurl 7.88.0 or later. Older ones (Ubuntu 22.04's 7.81 among them) close a
    /// connection on which nothing was written, so there the connector keeps none warm, connects
    /// on its first send, and says so once in its log (`notice`).
    public var keepsConnectionWarm: Bool = true
    /// How connections reach APNs: through the proxy the environment names (``Proxy/environment``,
    /// the default: `https_proxy`, `no_proxy` and friends, as curl reads them), directly
    /// (``Proxy/direct``), or through the proxy given (``Proxy/http(host:port:credentials:)``,
    /// ``Proxy/https(host:port:credentials:trustedCertificateAuthority:)``,
    /// ``Proxy/socks5(host:port:credentials:)``, ``Proxy/init(url:)``).
    public var proxy: Proxy = .environment
    /// How often the transport hands the process's freed heap memory back to the system (glibc's
    /// `malloc_trim(0)`, on the transport's own thread, at most once per interval across every
    /// connector in the process); nil (the default) never does.
    ///
    /// glibc keeps what a program frees in its arenas for reuse, and with libcurl before 8.7
    /// (Debian 12's 7.88 among them) a long-running sender's resident size creeps by some
    /// megabytes over an hour of faults and reconnections while the memory in use stays flat (the
    /// Reliability article says why). Set to a second in a process started with
    /// `MALLOC_ARENA_MAX=1`, it keeps the resident size near what is in use; with glibc's default
    /// arenas, whose free memory is touched again between two trims, it helps less. It trims the
    /// whole process's heap, not only the transport's, locking each arena while it walks it, on
    /// the transport's thread (a few milliseconds), so sends wait that long once per interval; a
    /// trim every second cost the soak no measurable throughput. It does nothing on macOS or with a C library other
    /// than glibc.
    ///
    /// ```swift
    /// var transport = TransportConfiguration()
    /// transport.memoryTrimInterval = .seconds(1)
    /// ```
    public var memoryTrimInterval: Duration?

    /// Transport settings; every default is what a production sender wants.
    ///
    /// - Parameters:
    ///   - requestTimeout: Default deadline of a send, from when it is made (30 s).
    ///   - connectTimeout: Longest TCP + TLS connect (10 s).
    ///   - trustedCertificateAuthority: The only CA to trust (tests with a mock server); nil for the
    ///     system's roots.
    ///   - maximumConnectionsPerHost: Connections per host (1).
    ///   - maximumConcurrentStreams: Streams per connection (1000; the server may lower it).
    ///   - maximumIdleTime: How long an idle connection may be and still carry a send; the
    ///     default is the protocol reference's decision.
    ///   - tcpKeepAliveInterval: TCP keepalive on idle connections (30 s); nil for none.
    ///   - circuitBreaker: When to fail fast (``CircuitBreakerPolicy``); nil for never.
    ///   - shutdownGracePeriod: How long in-flight sends may finish on graceful shutdown (10 s).
    /// The clock a send's own waits run on (the wait before a retry, and the start its deadline
    /// counts from): the real one, unless a test gives one it advances itself (``WaitClock``).
    package var waitClock = WaitClockReference(ContinuousWaitClock.shared)

    /// Where the transport's loop records how long each stream stays empty between an answer and
    /// the next request (``StreamIdleHistogram``), for the benchmark's far-from-APNs table; nil (the
    /// default) measures nothing, so a sender's connector pays nothing for it.
    package var streamIdle: StreamIdleHistogram?

    /// The thresholds behind a slow spell and an added connection's retirement: their defaults,
    /// unless a test shortens them.
    package var poolJudgement = PoolJudgement()

    public init(
        requestTimeout: Duration = TransportConfiguration.defaultRequestTimeout,
        connectTimeout: Duration = .seconds(10),
        trustedCertificateAuthority: CredentialSource? = nil,
        maximumConnectionsPerHost: Int = 1,
        maximumConcurrentStreams: Int = 1000,
        maximumIdleTime: Duration = .seconds(15),
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

    /// A send's deadline when neither the send nor the configuration gives one: 30 s.
    @usableFromInline static let defaultRequestTimeout: Duration = .seconds(30)

    /// The longest duration any setting, send timeout or retry back-off accepts: 24 hours. A
    /// longer one is refused with a typed error rather than clamped, since it is almost certainly
    /// a unit mistake (milliseconds passed as seconds); within it, no arithmetic of the transport
    /// can overflow.
    public static let maximumDuration: Duration = .seconds(24 * 60 * 60)
    /// The most connections a connector opens to one host, added ones included: 1,000.
    public static let maximumConnectionsLimit = 1_000
    /// The most streams per connection: 2³¹ − 1, HTTP/2's own limit.
    public static let maximumStreamsLimit = Int(Int32.max)

    /// Throws for a send's own timeout (`send(…, timeout:)`, a bulk send's per-device timeout) that
    /// is not positive or is over ``maximumDuration``; nil (the connector's default) passes.
    static func validate(sendTimeout timeout: Duration?) throws(APNsError) {
        if let timeout, timeout <= .zero || timeout > maximumDuration { throw .validation(.invalidTimeout(timeout)) }
    }

    /// Throws for a value no transport can use, naming the range it must be in.
    func validate() throws(APNsError) {
        func check(_ name: String, _ value: Duration, from lowest: Duration, orZero: Bool = false) throws(APNsError) {
            let low = orZero ? Duration.zero : lowest
            guard value >= low, orZero || value > .zero, value <= Self.maximumDuration else {
                throw .validation(
                    .invalidTransportSetting(
                        name: name, value: "\(value); use \(orZero ? "0" : "\(lowest)") to 24 hours (86400 seconds)"))
            }
        }
        func check(_ name: String, _ value: Int, within range: ClosedRange<Int>) throws(APNsError) {
            guard range.contains(value) else {
                throw .validation(
                    .invalidTransportSetting(
                        name: name, value: "\(value); use \(range.lowerBound) to \(range.upperBound)"))
            }
        }
        try check("requestTimeout", requestTimeout, from: .milliseconds(1))
        try check("connectTimeout", connectTimeout, from: .milliseconds(1))
        try check("maximumConnectionsPerHost", maximumConnectionsPerHost, within: 1...Self.maximumConnectionsLimit)
        try check("maximumConcurrentStreams", maximumConcurrentStreams, within: 1...Self.maximumStreamsLimit)
        try check(
            "additionalConnectionsWhenSlow", additionalConnectionsWhenSlow, within: 0...Self.maximumConnectionsLimit)
        try check("shutdownGracePeriod", shutdownGracePeriod, from: .zero, orZero: true)
        try check("maximumIdleTime", maximumIdleTime, from: .seconds(1))
        if let tcpKeepAliveInterval { try check("tcpKeepAliveInterval", tcpKeepAliveInterval, from: .seconds(1)) }
        if let memoryTrimInterval { try check("memoryTrimInterval", memoryTrimInterval, from: .seconds(1)) }
        try proxy.validate()
        if let breaker = circuitBreaker {
            try check("circuitBreaker.failureThreshold", breaker.failureThreshold, within: 1...Int(Int32.max))
            try check("circuitBreaker.initialCoolDown", breaker.initialCoolDown, from: .milliseconds(1))
            try check("circuitBreaker.maximumCoolDown", breaker.maximumCoolDown, from: breaker.initialCoolDown)
        }
    }
}
