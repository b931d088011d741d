import APNsMockServer
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import Testing

/// A client that opens one stream more than the mock allows gets that stream refused, and the
/// others answered, as APNs does (protocol reference, Hosts and connections). Every well-behaved
/// HTTP/2 client (libcurl, SwiftNIO's) keeps to the advertised limit, so this one writes its frames
/// itself: the preface, then HEADERS without END_STREAM on 1,001 streams, so that all are open at
/// once, and DATA ending each.
@Suite struct StreamLimitTests {
    /// Collects what the server writes, as frames.
    final class Frames: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        struct Frame: Sendable, Equatable {
            var type: UInt8
            var flags: UInt8
            var stream: UInt32
            var payload: [UInt8]
        }
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

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [
            UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
            UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
        ] + payload
    }

    /// Polls `condition` every 20 ms; false if it does not hold within `limit`.
    static func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + limit
        while !condition() {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    @Test func aStreamOverTheLimitIsRefusedAndTheOthersAreAnswered() async throws {
        let server = try await MockAPNsServer.start(.init())
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificateAuthorityPEM.utf8)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let frames = Frames()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                try channel.pipeline.syncOperations.addHandler(frames)
            }
        }.connect(host: "127.0.0.1", port: server.port).get()
        func write(_ bytes: [UInt8]) async throws {
            try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
        }

        try await write(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + Self.frame(type: 0x4, flags: 0, stream: 0, []))
        // The server's SETTINGS says the limit; acknowledge it.
        try #require(
            await Self.eventually(within: .seconds(5)) { frames.all.contains { $0.type == 0x4 && $0.flags == 0 } })
        let settings = try #require(frames.all.first { $0.type == 0x4 && $0.flags == 0 })
        var advertised: UInt32?
        for entry in stride(from: 0, to: settings.payload.count - 5, by: 6)
        where settings.payload[entry] == 0 && settings.payload[entry + 1] == 3 {
            advertised = settings.payload[(entry + 2)..<(entry + 6)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        #expect(advertised == 1000)
        try await write(Self.frame(type: 0x4, flags: 0x1, stream: 0, []))

        var encoder = HPACKEncoder(allocator: channel.allocator)
        let streams = (0..<1001).map { UInt32(2 * $0 + 1) }
        var headers = [UInt8]()
        for stream in streams {
            var block = channel.allocator.buffer(capacity: 128)
            try encoder.encode(
                headers: HPACKHeaders([
                    (":method", "POST"), (":scheme", "https"), (":path", "/3/device/00fc13ad"),
                    (":authority", "localhost"), ("apns-push-type", "alert"), ("apns-topic", "com.example.app"),
                ]), to: &block)
            headers += Self.frame(type: 0x1, flags: 0x4, stream: stream, Array(block.readableBytesView))
        }
        try await write(headers)
        // Stream 1,001 is refused, REFUSED_STREAM (7), and nothing ends the connection.
        let refused = { frames.all.filter { $0.type == 0x3 } }
        try #require(await Self.eventually(within: .seconds(10)) { !refused().isEmpty })
        #expect(refused().map(\.stream) == [streams[1000]])
        #expect(refused().first?.payload == [0, 0, 0, 7])
        var data = [UInt8]()
        for stream in streams.prefix(1000) {
            data += Self.frame(type: 0x0, flags: 0x1, stream: stream, Array(#"{"aps":{"alert":"x"}}"#.utf8))
        }
        try await write(data)
        let answered = { Set(frames.all.filter { $0.type == 0x1 }.map(\.stream)) }
        #expect(await Self.eventually(within: .seconds(20)) { answered().count == 1000 })
        #expect(answered() == Set(streams.prefix(1000)))
        #expect(!frames.all.contains { $0.type == 0x7 })  // no GOAWAY
        try await channel.close().get()
        try await group.shutdownGracefully()
        try await server.stop()
    }
}
