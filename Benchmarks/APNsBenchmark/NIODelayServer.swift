import APNsMockServer
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A third delayed server for the far-from-APNs table: SwiftNIO's HTTP/2 server as it comes
/// (swift-nio-http2's own flow control, window updates and frame batching), answering every
/// request 200 `delayMilliseconds` after its last frame arrived, and checking nothing. Where the
/// mock spends its CPU on APNs' rules, this one does next to nothing per request, so what a client
/// reaches against it is what it makes of a SwiftNIO peer.
///
/// Run as a child process of the benchmark (`--serve-nio`), so that it has a core's share of its
/// own, as nginx has.
///
/// `late` (`--far-server nio-late`) is the same server as a service written without the benchmark
/// in mind is: two event-loop threads, and each answer carrying an `apns-id` made where it is
/// written, from 16 random bytes read from `/dev/urandom` (open, read, close: three system calls on
/// the event loop per answer), so that answers leave a little late and in clumps — as a busy server
/// far away answers.
enum NIODelayServer {
    /// Starts the child: it prints `port <n> ca <path>` once it listens.
    /// With `statistics`, it prints ``Statistics`` to standard error each second.
    static func launch(
        delayMilliseconds: Int, streams: Int, statistics: Bool, late: Bool = false
    ) throws
        -> MockServerProcess
    {
        var server = try MockServerProcess.child(
            ["--serve-nio", "--serve-delay", String(delayMilliseconds), "--far-streams", String(streams)]
                + (statistics ? ["--far-server-statistics"] : []) + (late ? ["--serve-late"] : []),
            what: "the SwiftNIO server")
        server.leftovers = [server.caPath]
        return server
    }

    /// Serves until killed (the child's side of ``launch(delayMilliseconds:streams:statistics:)``).
    static func serve(delayMilliseconds: Int, streams: Int, statistics: Bool, late: Bool = false) async throws {
        let authority = try MockCertificateAuthority(name: "swift-apns benchmark CA")
        let certificate = try authority.issueServerCertificate()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [
                .certificate(try NIOSSLCertificate(bytes: Array(certificate.certificatePEM.utf8), format: .pem))
            ],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificate.privateKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: streams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
        ]
        // libcurl ends finished streams with RST_STREAM: not an attack here.
        connection.maximumConnectionGlitches = 1_000_000
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.streamResetFrameRateLimit.maximumCount = 200_000
        stream.streamResetFrameRateLimit.windowLength = .seconds(1)
        stream.streamErrorRateLimit.maximumCount = 200_000
        stream.streamErrorRateLimit.windowLength = .seconds(1)
        let (connectionSettings, streamSettings) = (connection, stream)
        let delay = TimeAmount.milliseconds(Int64(delayMilliseconds))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: late ? 2 : 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connectionSettings, streamConfiguration: streamSettings
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(DelayedAnswer(delay: delay, late: late))
                        }
                    }
                }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        let caPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apns-bench-nio-ca-\(UUID().uuidString.prefix(8)).pem"
        ).path
        try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: caPath))
        FileHandle.standardOutput.write(Data("port \(channel.localAddress?.port ?? 0) ca \(caPath)\n".utf8))
        while true {
            try await Task.sleep(for: .seconds(1))
            if statistics { Statistics.shared.report() }
        }
    }

    /// Answers a stream's request `delay` after its end arrived: `:status 200`, no body.
    final class DelayedAnswer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        let delay: TimeAmount
        /// Each answer carries an apns-id made from /dev/urandom where it is written.
        let late: Bool

        init(delay: TimeAmount, late: Bool) {
            self.delay = delay
            self.late = late
        }

        /// `:status 200`, and with `late` an apns-id read fresh from /dev/urandom.
        func answer() -> HTTP2Frame.FramePayload {
            var headers = HPACKHeaders([(":status", "200")])
            if late { headers.add(name: "apns-id", value: Self.randomID()) }
            return .headers(.init(headers: headers, endStream: true))
        }

        /// A UUID-shaped id from 16 bytes of /dev/urandom: open, read, close.
        static func randomID() -> String {
            var bytes = [UInt8](repeating: 0, count: 16)
            let descriptor = open("/dev/urandom", O_RDONLY)
            if descriptor >= 0 {
                _ = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, 16) }
                close(descriptor)
            }
            // Hex by hand: the three system calls are the work this server stands for, not string
            // formatting.
            let digits = Array("0123456789abcdef".utf8)
            var id = [UInt8]()
            id.reserveCapacity(36)
            for (index, byte) in bytes.enumerated() {
                if [4, 6, 8, 10].contains(index) { id.append(UInt8(ascii: "-")) }
                id.append(digits[Int(byte >> 4)])
                id.append(digits[Int(byte & 0xF)])
            }
            return String(decoding: id, as: UTF8.self)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let ended: Bool
            switch unwrapInboundIn(data) {
            case .headers(let headers): ended = headers.endStream
            case .data(let body): ended = body.endStream
            default: ended = false
            }
            guard ended else { return }
            let arrival = NIODeadline.now()
            Statistics.shared.arrived(arrival)
            guard delay > .zero else {
                context.writeAndFlush(wrapOutboundOut(answer()), promise: nil)
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                let (handler, context) = bound.value
                let answer = handler.answer()
                Statistics.shared.answered(NIODeadline.now(), due: arrival + handler.delay)
                context.writeAndFlush(handler.wrapOutboundOut(answer), promise: nil)
            }
        }
    }

    /// What the server sees of a client, reported each second: requests received a second; the
    /// requests it holds on average (received, not yet answered: rate × delay when the client
    /// keeps every stream busy); how late the answers leave after their due time; and the slot
    /// gap, from an answer leaving to the next request arriving, paired first in first out — how
    /// long a stream the server answered stays empty, client and both directions of the
    /// connection included.
    final class Statistics: Sendable {
        static let shared = Statistics()
        struct State {
            var held = 0
            var last: NIODeadline = .now()
            var heldSeconds = 0.0
            var since: NIODeadline = .now()
            var arrivals = 0
            var answered = 0
            var lateness = 0.0
            var latest = 0.0
            /// When answers left that no request has filled yet, oldest first.
            var freed: [NIODeadline] = []
            var freedHead = 0
            var gaps: [Double] = []

            init() {}

            /// A new second's counts; what is held and what waits to be filled carry over.
            init(freed: [NIODeadline], freedHead: Int, held: Int, now: NIODeadline) {
                self.freed = freed
                self.freedHead = freedHead
                self.held = held
                last = now
                since = now
            }

            mutating func advance(to now: NIODeadline) {
                heldSeconds += Double(held) * Double((now - last).nanoseconds) / 1e9
                last = now
            }
        }
        let state = Mutex(State())

        func arrived(_ now: NIODeadline) {
            state.withLock { state in
                state.advance(to: now)
                state.held += 1
                state.arrivals += 1
                guard state.freedHead < state.freed.count else { return }
                state.gaps.append(Double((now - state.freed[state.freedHead]).nanoseconds) / 1e6)
                state.freedHead += 1
                if state.freedHead > 4096 {
                    state.freed.removeFirst(state.freedHead)
                    state.freedHead = 0
                }
            }
        }

        func answered(_ now: NIODeadline, due: NIODeadline) {
            state.withLock { state in
                state.advance(to: now)
                state.held -= 1
                state.answered += 1
                state.freed.append(now)
                let late = Double((now - due).nanoseconds) / 1e6
                state.lateness += late
                state.latest = max(state.latest, late)
            }
        }

        func report() {
            let line = state.withLock { state -> String? in
                let now = NIODeadline.now()
                state.advance(to: now)
                let seconds = Double((now - state.since).nanoseconds) / 1e9
                defer { state = State(freed: state.freed, freedHead: state.freedHead, held: state.held, now: now) }
                guard state.answered > 0, seconds > 0 else { return nil }
                let gaps = state.gaps.sorted()
                func at(_ fraction: Double) -> Double {
                    gaps.isEmpty ? 0 : gaps[min(gaps.count - 1, Int(fraction * Double(gaps.count)))]
                }
                let mean = gaps.isEmpty ? 0 : gaps.reduce(0, +) / Double(gaps.count)
                return String(
                    format:
                        "nio server: %.0f requests/s, %.0f held, answers late by %.2f ms (at most %.1f); slot gap mean %.2f, p10 %.2f, p50 %.2f, p90 %.2f ms\n",
                    Double(state.arrivals) / seconds, state.heldSeconds / seconds,
                    state.lateness / Double(state.answered), state.latest, mean, at(0.1), at(0.5), at(0.9))
            }
            if let line { FileHandle.standardError.write(Data(line.utf8)) }
        }
    }
}
