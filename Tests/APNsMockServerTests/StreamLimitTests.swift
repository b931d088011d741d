import APNsMockServer
import NIOHPACK
import TestFixtures
import Testing

/// A client that opens one stream more than the mock allows gets that stream refused, and the
/// others answered, as APNs does (protocol reference, Hosts and connections). Every well-behaved
/// HTTP/2 client (libcurl, SwiftNIO's) keeps to the advertised limit, so this one writes its frames
/// itself: the preface, then HEADERS without END_STREAM on 1,001 streams, so that all are open at
/// once, and DATA ending each.
@Suite struct StreamLimitTests {
    @Test func aStreamOverTheLimitIsRefusedAndTheOthersAreAnswered() async throws {
        // Each of these unauthenticated requests is an error answer: the error limit, which would
        // end the connection at the thousandth, is not this test's subject.
        var configuration = MockAPNsServer.Configuration()
        configuration.errorLimit = nil
        let server = try await MockAPNsServer.start(configuration)
        let connection = try await RawHTTP2Connection(to: server)
        let frames = connection.frames
        // The server's SETTINGS says the limit (and was acknowledged).
        let settings = try #require(connection.serverSettings)
        var advertised: UInt32?
        for entry in stride(from: 0, to: settings.payload.count - 5, by: 6)
        where settings.payload[entry] == 0 && settings.payload[entry + 1] == 3 {
            advertised = settings.payload[(entry + 2)..<(entry + 6)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        #expect(advertised == 1000)

        let streams = (0..<1001).map { UInt32(2 * $0 + 1) }
        var headers = [UInt8]()
        for stream in streams {
            headers += try connection.headers(
                stream: stream,
                HPACKHeaders([
                    (":method", "POST"), (":scheme", "https"),
                    (":path", "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"),
                    (":authority", "localhost"), ("apns-push-type", "alert"), ("apns-topic", "com.example.app"),
                ]), endStream: false)
        }
        try await connection.write(headers)
        // Stream 1,001 is refused, REFUSED_STREAM (7), and nothing ends the connection.
        let refused = { frames.all.filter { $0.type == 0x3 } }
        try #require(await Poll.until(within: .seconds(60)) { !refused().isEmpty })
        #expect(refused().map(\.stream) == [streams[1000]])
        #expect(refused().first?.payload == [0, 0, 0, 7])
        var data = [UInt8]()
        for stream in streams.prefix(1000) {
            data += connection.data(stream: stream, #"{"aps":{"alert":"x"}}"#)
        }
        try await connection.write(data)
        let answered = { Set(frames.all.filter { $0.type == 0x1 }.map(\.stream)) }
        #expect(await Poll.until(within: .seconds(60)) { answered().count == 1000 })  // a busy machine starves its loop
        #expect(answered() == Set(streams.prefix(1000)))
        #expect(!frames.all.contains { $0.type == 0x7 })  // no GOAWAY
        try await connection.close()
        try await server.stop()
    }
}
