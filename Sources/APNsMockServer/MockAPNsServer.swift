import APNs
import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A real HTTP/2 + TLS server on loopback that behaves like APNs, for integration tests.
///
/// It serves device pushes, broadcasts to Live Activity channels and channel management (with
/// channels kept per bundle id for the server's lifetime), and checks what APNs checks — path, method, token or client certificate, push type, topic,
/// priority, expiration, apns-id, collapse id, payload size and shape — and answers with Apple's
/// status and reason, `apns-id` and `apns-unique-id`. Every request is recorded for assertions.
///
/// ```swift
/// let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
/// let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
/// defer { Task { try await server.stop() } }
/// var transport = TransportConfiguration()
/// transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
/// let connector = try TokenConnector(teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
///                                    environment: .custom(host: server.host, port: server.port), transport: transport)
/// try await send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, via: connector, to: device)
/// #expect(server.requests.last?.bodyText == #"{"aps":{"alert":"Hi"}}"#)
/// ```
///
/// Thread safety: `Sendable`; its methods may be called from any task while it runs.
public final class MockAPNsServer: Sendable {
    /// How the server behaves.
    public struct Configuration: Sendable {
        /// The address to listen on; loopback by default.
        public var host = "127.0.0.1"
        /// The APNs environment the server answers as: the sandbox (the default) adds
        /// `apns-unique-id` to a success, production does not (protocol reference, Responses).
        public var environment = Environment.sandbox
        /// Refuse what APNs lets through but no correct client sends: a device request without
        /// `apns-push-type` (`MissingPushType`; APNs takes it as an alert), unknown keys inside
        /// `aps`, and a device payload that is not its push type's shape (a negative badge, an
        /// alert without `aps`: `BadRequestPayload`; APNs does not check). Off by default, so the
        /// mock accepts what APNs accepts; swift-apns' own tests turn it on.
        public var strict = false
        /// 0 picks a free port.
        public var port = 0
        /// Keys whose tokens verify. Tokens signed by any other key get 403 InvalidProviderToken.
        public var signingKeys: [MockCertificateAuthority.SigningKey]
        /// Signs the server's certificate and is trusted for client certificates; generated if nil.
        public var certificateAuthority: MockCertificateAuthority?
        /// More CAs (PEM) trusted for client certificates.
        public var additionalClientCertificateAuthorities: [String] = []
        /// Ask for a client certificate and verify it when offered (token clients offer none).
        public var verifiesClientCertificates = true
        /// The shortest device token the server takes, in bytes; a shorter one is answered 400
        /// BadDeviceToken, as APNs answers a token it did not issue (APNs issues 32-byte tokens:
        /// protocol reference, Device requests). Lower it for tests that use short tokens.
        public var minimumDeviceTokenBytes = 32
        /// Bundle ids the team may push to; nil accepts any.
        public var allowedBundleIDs: Set<String>?
        /// Keys restricted as Apple restricts them, by key id (protocol reference, Token authentication):
        /// a token of a key used outside its environments is answered 403
        /// BadEnvironmentKeyIdInToken, for an app outside its topics 400 TopicDisallowed. A key
        /// not listed is team-scoped for both environments.
        public var keyScopes: [String: KeyScope] = [:]
        /// Related keys, by key id (either way round): tokens of a topic-specific key and of its
        /// related key may share a connection, as Apple allows. Any other second key on a
        /// connection is answered 403 UnrelatedKeyIdInToken.
        public var relatedKeys: [String: String] = [:]
        /// Ends each connection with GOAWAY after this many streams (to test reconnection).
        public var goAwayAfterStreams: Int?
        /// APNs' manners under errors (protocol reference, Responses): too many error answers
        /// on one connection end it. Nil turns it off.
        public var errorLimit: ErrorLimit? = ErrorLimit()
        /// A key whose token changes sooner than this after the previous one gets 429
        /// TooManyProviderTokenUpdates, as with APNs (20 minutes). `nil` turns the check off, for
        /// tests that run many short-lived processes, each minting its own token.
        public var minimumTokenUpdateInterval: Duration? = ProviderTokenRules.minimumUpdateInterval
        /// Broadcast channels one app may have (APNs: 10,000); more get CannotCreateChannelConfig.
        public var maximumChannelsPerApp = 10_000
        /// SETTINGS_MAX_CONCURRENT_STREAMS.
        public var maximumConcurrentStreams = 1000
        /// SETTINGS_HEADER_TABLE_SIZE: the HPACK dynamic table the server decodes requests with.
        /// Nil advertises nothing (HTTP/2's 4,096 bytes); a small one (0, 256) makes a client
        /// shrink its table and encode every request within it, as a server short of memory may.
        public var headerTableSize: Int?
        /// Start each token connection with SETTINGS_MAX_CONCURRENT_STREAMS 1 and raise it to
        /// ``maximumConcurrentStreams`` once a request with a valid provider token has arrived,
        /// whatever its answer, as APNs does (protocol reference, Hosts and connections). A
        /// connection that presents a client certificate is raised as soon as its TLS handshake
        /// ends (its first SETTINGS, sent before the handshake, says 1).
        public var oneStreamUntilValidToken = false
        /// The name ``oneStreamUntilValidToken`` had when the limit was raised after the first
        /// success, on every connection.
        @available(*, deprecated, renamed: "oneStreamUntilValidToken")
        public var oneStreamUntilFirstSuccess: Bool {
            get { oneStreamUntilValidToken }
            set { oneStreamUntilValidToken = newValue }
        }
        /// The protocols offered by ALPN; `["http/1.1"]` makes a server that is not APNs.
        public var applicationProtocols = ["h2"]
        /// Hold each new connection's first bytes this long before the TLS handshake proceeds.
        public var tlsHandshakeDelay: Duration?
        /// Event-loop threads.
        public var threads = 1
        /// Keep every request for ``requests``; turn off for long benchmarks.
        public var recordsRequests = true
        /// The server's notion of now, for token ages.
        public var clock: @Sendable () -> Date = { Date() }

        public init(signingKeys: [MockCertificateAuthority.SigningKey] = []) {
            self.signingKeys = signingKeys
        }
    }

    public let host: String
    public let port: Int
    /// The CA that signed the server certificate: trust it in the client under test.
    public let certificateAuthority: MockCertificateAuthority
    public var certificateAuthorityPEM: String { certificateAuthority.certificatePEM }

    let state: ServerState
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel

    private init(
        host: String, port: Int, authority: MockCertificateAuthority, state: ServerState,
        group: MultiThreadedEventLoopGroup, channel: Channel
    ) {
        self.host = host
        self.port = port
        self.certificateAuthority = authority
        self.state = state
        self.group = group
        self.channel = channel
    }

    /// Writing to a connection its client has closed raises SIGPIPE, whose default action ends the
    /// process: SwiftNIO writes with write(2), which, unlike a send with MSG_NOSIGNAL, raises it.
    /// A client that closes connections under the server's answers (the error limit's GOAWAYs, a
    /// test's faults) would otherwise end the test process, so the first server started ignores
    /// SIGPIPE in its process, as SwiftNIO asks of the programs that use it; the write then fails
    /// with EPIPE, which NIO handles as a closed connection.
    private static let ignoresBrokenPipes: Void = {
        #if os(Linux)
            _ = signal(SIGPIPE, SIG_IGN)
        #endif
    }()

    /// Starts a server and returns once it listens. The first ignores SIGPIPE in the process:
    /// writing to a connection its client closed would otherwise end it.
    public static func start(_ configuration: Configuration = Configuration()) async throws -> MockAPNsServer {
        _ = ignoresBrokenPipes
        let authority = try configuration.certificateAuthority ?? MockCertificateAuthority()
        let serverCertificate = try authority.issueServerCertificate()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [
                .certificate(try NIOSSLCertificate(bytes: Array(serverCertificate.certificatePEM.utf8), format: .pem))
            ],
            privateKey: .privateKey(
                try NIOSSLPrivateKey(bytes: Array(serverCertificate.privateKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = configuration.applicationProtocols
        tls.minimumTLSVersion = .tlsv12
        tls.shutdownTimeout = .milliseconds(100)  // clients rarely answer close_notify; stop() should be quick
        if configuration.verifiesClientCertificates {
            tls.certificateVerification = .optionalVerification
            var roots = [try NIOSSLCertificate(bytes: Array(authority.certificatePEM.utf8), format: .pem)]
            for pem in configuration.additionalClientCertificateAuthorities {
                roots += try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
            }
            tls.trustRoots = .certificates(roots)
        }
        let sslContext = try NIOSSLContext(configuration: tls)
        let state = try ServerState(configuration: configuration)

        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            HTTP2Setting(
                parameter: .maxConcurrentStreams,
                value: StreamLimit.enforcedByNIO(
                    configuration.oneStreamUntilValidToken ? 1 : configuration.maximumConcurrentStreams)),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16384),
        ]
        if let size = configuration.headerTableSize {
            connectionConfiguration.initialSettings.append(HTTP2Setting(parameter: .headerTableSize, value: size))
        }
        // libcurl 7.88 ends every finished stream with RST_STREAM(STREAM_CLOSED); NIO's defaults
        // would treat a busy client as a rapid-reset attack. Finite limits, because NIO preallocates
        // room for them.
        connectionConfiguration.maximumConnectionGlitches = 1_000_000
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        streamConfiguration.streamResetFrameRateLimit.maximumCount = 200_000
        streamConfiguration.streamResetFrameRateLimit.windowLength = .seconds(1)
        streamConfiguration.streamErrorRateLimit.maximumCount = 200_000
        streamConfiguration.streamErrorRateLimit.windowLength = .seconds(1)
        let connectionSettings = connectionConfiguration
        let streamSettings = streamConfiguration

        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let fault = state.connectionOpened()
                    if case .stallHandshake? = fault {
                        try channel.pipeline.syncOperations.addHandler(HoldInbound(for: nil))
                    } else if let delay = configuration.tlsHandshakeDelay {
                        try channel.pipeline.syncOperations.addHandler(HoldInbound(for: delay))
                    }
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    try channel.pipeline.syncOperations.addHandler(SettingsRewriter())
                    let connection = NIOLoopBound(
                        ConnectionContext(
                            channel: channel, fault: fault,
                            streamLimit: configuration.oneStreamUntilValidToken
                                ? 1 : configuration.maximumConcurrentStreams),
                        eventLoop: channel.eventLoop)
                    let id = ObjectIdentifier(channel)
                    state.register(id) { channel.eventLoop.execute { connection.value.goAwayGracefully() } }
                    channel.closeFuture.whenComplete { _ in state.unregister(id) }
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connectionSettings, streamConfiguration: streamSettings
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                StreamHandler(state: state, connection: connection))
                        }
                    }
                    try channel.pipeline.syncOperations.addHandler(PingCounter(state: state, connection: connection))
                }
            }
        do {
            let channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
            guard let port = channel.localAddress?.port else { throw MockServerError.noPort }
            return MockAPNsServer(
                host: configuration.host, port: port, authority: authority, state: state, group: group, channel: channel
            )
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Stops listening, closes connections and frees the threads.
    public func stop() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }

    /// Every request the server judged so far (when ``Configuration/recordsRequests`` is on), in
    /// order of completion: those a fault dealt with instead are in ``receivedRequests``.
    public var requests: [RecordedRequest] { state.records }

    /// Every request received so far, in order: those the server judged, and those a fault
    /// dealt with instead (``RecordedRequest/fault``; a 503 it answered, a stream it reset, one it
    /// never answered). What the console lists.
    public var receivedRequests: [RecordedRequest] { state.receivedRecords }

    /// Forgets the recorded requests (``requests`` and ``receivedRequests``).
    public func clearRequests() { state.clearRecords() }

    /// Waits until ``requests`` holds `count` requests that `matches` accepts (those recorded
    /// before the call included: a request is recorded when the server answers it); returns false
    /// if `limit` passes first or the calling task is cancelled. `matches` runs on the server's
    /// threads, once per request, as the server records it: keep it short. Needs
    /// ``Configuration/recordsRequests``.
    ///
    /// ```swift
    /// let started = try await bulkTask()          // sending in the background
    /// #expect(await server.requests(count: 300, within: .seconds(30)))
    /// gateway.kill()                              // mid-way, whatever the machine's speed
    /// ```
    public func requests(
        count: Int, within limit: Duration, where matches: @escaping @Sendable (RecordedRequest) -> Bool = { _ in true }
    ) async -> Bool {
        await wait(for: .recorded(matches), count: count, within: limit)
    }

    /// ``requests(count:within:where:)`` over ``receivedRequests``: a request a fault dealt with
    /// counts too.
    public func receivedRequests(
        count: Int, within limit: Duration, where matches: @escaping @Sendable (RecordedRequest) -> Bool = { _ in true }
    ) async -> Bool {
        await wait(for: .received(matches), count: count, within: limit)
    }

    /// Waits until `count` requests have arrived whole (their last frame read, before any fault
    /// or answer: with ``Fault/delay(_:)`` they are then waiting for their answers), those before
    /// the call included, recorded or not; returns false if `limit` passes first or the calling
    /// task is cancelled.
    ///
    /// ```swift
    /// server.inject(.delay(.milliseconds(800)))
    /// let sends = Task { try await bulkTask() }
    /// #expect(await server.arrivals(count: 20, within: .seconds(30)))
    /// await connector.shutdown()                  // with 20 sends on the wire
    /// ```
    public func arrivals(count: Int, within limit: Duration) async -> Bool {
        await wait(for: .arrival, count: count, within: limit)
    }

    /// Waits until clients have acknowledged `count` SETTINGS frames, on any connection, those
    /// before the call included; returns false if `limit` passes first or the calling task is
    /// cancelled. A client acknowledges the server's first SETTINGS once it has read them, and
    /// each later one (``Configuration/oneStreamUntilValidToken`` raising the stream limit),
    /// though it may hold an acknowledgement until it next writes to the connection (libcurl 8
    /// does). Until then it may open streams past a limit it has not seen, which the server accepts.
    ///
    /// ```swift
    /// let holder = Task { try await send(first, via: connector, to: device) }  // never answered
    /// #expect(await server.arrivals(count: 1, within: .seconds(30)))
    /// #expect(await server.settingsAcknowledgements(count: 1, within: .seconds(30)))
    /// // the client now knows it has one stream: later sends wait for it
    /// ```
    public func settingsAcknowledgements(count: Int, within limit: Duration) async -> Bool {
        await wait(for: .settingsAcknowledgement, count: count, within: limit)
    }

    private func wait(for event: ServerState.Wait.Event, count: Int, within limit: Duration) async -> Bool {
        let id = UUID()
        let timer = Task { [state] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            state.endWait(id)
        }
        let reached = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.wait(id, for: event, count: count, continuation: continuation)
            }
        } onCancel: { [state] in
            state.endWait(id)
        }
        timer.cancel()
        state.forgetWait(id)
        return reached
    }

    /// Streams answered so far, recorded or not.
    public var streamCount: Int { state.streamCount }

    /// TLS connections accepted so far.
    public var connectionCount: Int { state.connectionCount }

    /// HTTP/2 connections open now: a client's pool as the server sees it.
    public var openConnectionCount: Int { state.openConnectionCount }

    /// HTTP/2 PING frames received so far (acknowledgements not counted), on every connection.
    public var pingCount: Int { state.pingCount }
    /// Connections the server ended for answering too many errors (``Configuration/errorLimit``).
    public var connectionsEndedForErrors: Int { state.connectionsEndedForErrorsCount }

    /// Makes the server misbehave: connections opened from now on get `fault` (the first
    /// `connections` of them, or all when nil), for the first `requests` requests that reach a
    /// fault (or all when nil). `nil` heals the server for new connections.
    ///
    /// ```swift
    /// server.inject(.resetAfterProcessing(requests: 20), connections: 1)   // one connection dies
    /// server.inject(.respond(status: 503, retryAfter: 2, body: "<html>"), requests: 100)
    /// ```
    public func inject(_ fault: Fault?, connections: Int? = nil, requests: Int? = nil) {
        state.inject(fault, connections: connections, requests: requests)
    }

    /// Sends GOAWAY (NO_ERROR, highest stream id) on every open connection: clients finish what is
    /// on them and move to new connections — which get a fault injected before this call.
    ///
    /// ```swift
    /// server.inject(.resetAfterProcessing(requests: 50), connections: 1)
    /// server.goAwayAll()   // the client's next connection is the faulty one
    /// ```
    public func goAwayAll() {
        for goAway in state.openConnectionGoAways() { goAway() }
    }

    /// How many times a request with this apns-id was processed (accepted for delivery): 0 for one
    /// never seen, refused or rejected; more than 1 is a duplicate.
    public func processedCount(apnsID: String) -> Int { state.processedCount(apnsID: apnsID) }

    /// Requests (or GOAWAYs) that met an injected fault so far; they are not in ``streamCount``.
    public var faultsApplied: Int { state.faultsApplied }

    /// Every processed apns-id with its count.
    public var processedCounts: [String: Int] { state.processed }

    /// Forgets the processed counts (long runs check them in waves).
    public func clearProcessedCounts() { state.clearProcessed() }

    /// Makes the server answer pushes to `deviceToken` with a rejection, as APNs would for a token
    /// the user uninstalled (`410 Unregistered` with `timestamp`) and so on. `nil` removes it.
    public func reject(
        deviceToken: String, with reason: APNsRejection.Reason?, status: Int? = nil, timestamp: Date? = nil
    ) {
        guard let reason else { return state.script(nil, for: deviceToken) }
        state.script(
            .init(
                status: status ?? reason.defaultStatus, reason: reason,
                timestamp: timestamp.map(APNsRejection.millisecondsSince1970)),
            for: deviceToken)
    }
}

extension MockAPNsServer {
    /// When a connection has answered too many errors: Apple says 4xx answers slow a connection
    /// down and too many disconnect it, sooner for BadDeviceToken, and that 410 does not count,
    /// and gives no numbers. Past either count, the server sends GOAWAY after the answer that
    /// crossed it, naming that stream the last it processed: a stream after it is not processed,
    /// and the client sends it again on a new connection (or, when the connection ends under a
    /// request already written, reports its delivery unknown).
    public struct ErrorLimit: Sendable, Hashable {
        /// Answers of 400–499 but 410 on one connection (our decision: 1,000).
        public var errors: Int
        /// 400 BadDeviceToken answers on one connection (our decision: 100).
        public var badDeviceTokens: Int

        public init(errors: Int = 1000, badDeviceTokens: Int = 100) {
            self.errors = errors
            self.badDeviceTokens = badDeviceTokens
        }
    }

    /// The APNs environment a mock server answers as.
    public enum Environment: Sendable, Hashable {
        /// `api.sandbox.push.apple.com`, for development builds: a success carries `apns-unique-id`.
        case sandbox
        /// `api.push.apple.com`: a success carries `apns-id` only.
        case production
    }
}

/// The mock server could not start.
public enum MockServerError: Error, CustomStringConvertible {
    case noPort
    public var description: String { "The mock server's socket has no port; check the host address." }
}

/// Holds a connection's inbound bytes for a while, then lets them through: a slow TLS handshake.
/// With no delay it holds them for good: a handshake that never goes on.
final class HoldInbound: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let delay: Duration?
    private var held: [NIOAny] = []
    private var open = false

    init(for delay: Duration?) { self.delay = delay }

    func channelActive(context: ChannelHandlerContext) {
        guard let delay else {
            context.fireChannelActive()
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .nanoseconds(delay.nanoseconds)) {
            let (handler, context) = loopBound.value
            handler.open = true
            for data in handler.held { context.fireChannelRead(data) }
            handler.held.removeAll()
            context.fireChannelReadComplete()
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if open { context.fireChannelRead(data) } else { held.append(data) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if open { context.fireChannelReadComplete() }
    }
}
