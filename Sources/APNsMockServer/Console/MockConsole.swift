import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The mock's console, served over HTTP/1.1 on loopback beside the mock (`apns mock-server
/// --console PORT`): the ``ConsoleAPI`` for tests in any language (list, filter, await and clear
/// what the mock received; make devices and remove their app; switch faults on and off).
///
/// Thread safety: `Sendable`; its channel and event loop are NIO's, the API's state is its own.
public final class MockConsole: Sendable {
    public let host: String
    public let port: Int
    let channel: any Channel
    let group: MultiThreadedEventLoopGroup

    init(host: String, port: Int, channel: any Channel, group: MultiThreadedEventLoopGroup) {
        self.host = host
        self.port = port
        self.channel = channel
        self.group = group
    }

    /// Starts the console of `server` on `host` (loopback by default: it can switch the mock's
    /// faults) and `port` (0 picks a free one).
    /// The composer sends to `destinations` (see ``ConsoleAPI/Destination``).
    public static func start(
        serving server: MockAPNsServer, host: String = "127.0.0.1", port: Int = 0,
        destinations: [ConsoleAPI.Destination] = []
    ) async throws
        -> MockConsole
    {
        let api = ConsoleAPI(server: server, destinations: destinations)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.pipeline.configureHTTPServerPipeline().flatMap {
                        channel.pipeline.addHandler(ConsoleHandler(api: api))
                    }
                }
                .bind(host: host, port: port).get()
            return MockConsole(host: host, port: channel.localAddress?.port ?? port, channel: channel, group: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Stops serving.
    public func stop() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }
}

/// One connection's requests, each answered by the API in a task and written back on the
/// channel's event loop, in order.
///
/// Thread safety: used on its channel's event loop only; its state is confined there.
final class ConsoleHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked Sendable: touched on the channel's event loop only (the answering task hops back
    // to it with `eventLoop.execute` before it reads or writes anything here).
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let api: ConsoleAPI
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// A limit well above any request the API takes.
    private let maximumBody = 1 << 20

    init(api: ConsoleAPI) { self.api = api }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            if body.count + buffer.readableBytes <= maximumBody {
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let request = ConsoleAPI.Request(method: head.method.rawValue, target: head.uri, body: body)
            let keepAlive = head.isKeepAlive
            let version = head.version
            let api = self.api
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            Task {
                let response = await api.answer(request)
                eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.write(response, version: version, keepAlive: keepAlive, context: context)
                }
            }
        }
    }

    private func write(
        _ response: ConsoleAPI.Response, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "content-length", value: String(response.body.utf8.count))
        if !response.body.isEmpty { headers.add(name: "content-type", value: response.contentType) }
        // The page loads nothing from elsewhere, and runs only its own script.
        headers.add(
            name: "content-security-policy",
            value: "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
        headers.add(name: "cache-control", value: "no-store")
        if !keepAlive { headers.add(name: "connection", value: "close") }
        let head = HTTPResponseHead(
            version: version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: response.body)))),
                promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
