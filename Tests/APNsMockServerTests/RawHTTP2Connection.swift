import APNsMockServer
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import TestFixtures

/// One TLS connection to the mock on which a test writes HTTP/2 frames itself, to do what a
/// well-behaved client (libcurl, SwiftNIO's) never does: open more streams than the server allows,
/// or send tokens of two keys on one connection.
final class RawHTTP2Connection: Sendable {
    /// One frame, as the server wrote it.
    struct Frame: Sendable, Equatable {
        var type: UInt8
        var flags: UInt8
        var stream: UInt32
        var payload: [UInt8]
    }

    /// Collects what the server writes, as frames.
    final class Frames: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        private let state = NIOLockedValueBox((bytes: [UInt8](), frames: [Frame]()))

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            state.withLockedValue { state in
                state.bytes += buffer.readableBytesView
                while state.bytes.count >= 9 {
                    let length = Int(state.bytes[0]) << 16 | Int(state.bytes[1]) << 8 | Int(state.bytes[2])
                    guard state.bytes.count >= 9 + length else { break }
                    let stream =
                        UInt32(state.bytes[5] & 0x7F) << 24 | UInt32(state.bytes[6]) << 16 | UInt32(state.bytes[7]) << 8
                        | UInt32(state.bytes[8])
                    state.frames.append(
                        Frame(
                            type: state.bytes[3], flags: state.bytes[4], stream: stream,
                            payload: Array(state.bytes[9..<(9 + length)])))
                    state.bytes.removeFirst(9 + length)
                }
            }
        }

        var all: [Frame] { state.withLockedValue { $0.frames } }
    }

    let frames = Frames()
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    /// One encoder for the connection's header blocks, as HPACK requires.
    private let encoder: NIOLockedValueBox<HPACKEncoder>

    /// Connects to `server` (TLS, ALPN h2) and exchanges the preface and SETTINGS: the server's
    /// SETTINGS is read and acknowledged, so its limits are in effect.
    init(to server: MockAPNsServer) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificateAuthorityPEM.utf8)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let frames = frames
        channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                try channel.pipeline.syncOperations.addHandler(frames)
            }
        }.connect(host: "127.0.0.1", port: server.port).get()
        encoder = NIOLockedValueBox(HPACKEncoder(allocator: channel.allocator))
        try await write(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + Self.frame(type: 0x4, flags: 0, stream: 0, []))
        guard await Poll.until(within: .seconds(5), { frames.all.contains { $0.type == 0x4 && $0.flags == 0 } })
        else { throw ChannelError.connectTimeout(.seconds(5)) }
        try await write(Self.frame(type: 0x4, flags: 0x1, stream: 0, []))
    }

    /// The server's first SETTINGS frame.
    var serverSettings: Frame? { frames.all.first { $0.type == 0x4 && $0.flags == 0 } }

    func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    /// A HEADERS frame (END_HEADERS) on `stream`, with END_STREAM when `endStream`.
    func headers(stream: UInt32, _ headers: HPACKHeaders, endStream: Bool) throws -> [UInt8] {
        var block = channel.allocator.buffer(capacity: 256)
        try encoder.withLockedValue { try $0.encode(headers: headers, to: &block) }
        return Self.frame(type: 0x1, flags: endStream ? 0x5 : 0x4, stream: stream, Array(block.readableBytesView))
    }

    /// A DATA frame ending `stream`.
    func data(stream: UInt32, _ body: String) -> [UInt8] {
        Self.frame(type: 0x0, flags: 0x1, stream: stream, Array(body.utf8))
    }

    func close() async throws {
        try await channel.close().get()
        try await group.shutdownGracefully()
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [
            UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
            UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
        ] + payload
    }
}
