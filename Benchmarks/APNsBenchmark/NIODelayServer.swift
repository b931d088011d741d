import APNsMockServer
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A third delayed server for the far-from-APNs table: SwiftNIO's HTTP/2 server as it comes
/// (swift-nio-http2's own flow control, window updates and frame batching), answering every
/// request 200 `delayMilliseconds` after its last frame arrived, and checking nothing. Where the
/// mock spends its CPU on APNs' rules, this one does next to nothing per request, so what a client
/// reaches against it is what it makes of a SwiftNIO peer.
///
/// Run as a child process of the benchmark (`--serve-nio`), so that it has a core's share of its
/// own, as nginx has.
enum NIODelayServer {
    /// Starts the child: it prints `port <n> ca <path>` once it listens.
    static func launch(delayMilliseconds: Int, streams: Int) throws -> MockServerProcess {
        try MockServerProcess.child(
            ["--serve-nio", "--serve-delay", String(delayMilliseconds), "--far-streams", String(streams)],
            what: "the SwiftNIO server")
    }

    /// Serves until killed (the child's side of ``launch(delayMilliseconds:streams:)``).
    static func serve(delayMilliseconds: Int, streams: Int) async throws {
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
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
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
                            try stream.pipeline.syncOperations.addHandler(DelayedAnswer(delay: delay))
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
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    /// Answers a stream's request `delay` after its end arrived: `:status 200`, no body.
    final class DelayedAnswer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        let delay: TimeAmount

        init(delay: TimeAmount) { self.delay = delay }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let ended: Bool
            switch unwrapInboundIn(data) {
            case .headers(let headers): ended = headers.endStream
            case .data(let body): ended = body.endStream
            default: ended = false
            }
            guard ended else { return }
            let answer = HTTP2Frame.FramePayload.headers(
                .init(headers: HPACKHeaders([(":status", "200")]), endStream: true))
            guard delay > .zero else {
                context.writeAndFlush(wrapOutboundOut(answer), promise: nil)
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                let (handler, context) = bound.value
                context.writeAndFlush(handler.wrapOutboundOut(answer), promise: nil)
            }
        }
    }
}
