@_spi(Benchmarks) import APNs
import APNsMockServer
import NIOHPACK
import TestFixtures
import Testing

/// APNs ties a connection to the key of its first push and refuses a token of another key on it,
/// 403 UnrelatedKeyIdInToken; a new connection takes that key (protocol reference, Responses). No
/// connector sends two keys on one connection, so this client writes its frames itself.
@Suite struct ConnectionKeyTests {
    static let second = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: "KEY0000002")

    /// A device push on `stream` signed by `token`, in one HEADERS and one DATA frame.
    static func push(on connection: RawHTTP2Connection, stream: UInt32, token: String) throws -> [UInt8] {
        try connection.headers(
            stream: stream,
            HPACKHeaders([
                (":method", "POST"), (":scheme", "https"), (":path", Device.test.path),
                (":authority", "localhost"), ("authorization", "bearer \(token)"), ("apns-push-type", "alert"),
                ("apns-topic", Fixture.bundleID),
            ]), endStream: false) + connection.data(stream: stream, #"{"aps":{"alert":"x"}}"#)
    }

    @Test func aConnectionRefusesASecondKeyAndANewConnectionTakesIt() async throws {
        try await Fixture.with(adjust: { $0.signingKeys.append(Self.second) }) { fixture in
            let first = try fixture.tokenConnector().bearerToken()
            let other = try TokenConnector(
                teamID: Self.second.teamID, keyID: Self.second.keyID, key: .pem(Self.second.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport, clock: Fixture.tokenClock)
            fixture.made.withLock { $0.append(other) }
            let second = try other.bearerToken()
            let answers = { fixture.server.requests.map { "\($0.status) \($0.reason ?? "-")" } }

            let connection = try await RawHTTP2Connection(to: fixture.server)
            try await connection.write(try Self.push(on: connection, stream: 1, token: first))
            try #require(await Poll.until(within: .seconds(10)) { answers().count == 1 })
            try await connection.write(try Self.push(on: connection, stream: 3, token: second))
            try #require(await Poll.until(within: .seconds(10)) { answers().count == 2 })
            try await connection.write(try Self.push(on: connection, stream: 5, token: first))
            try #require(await Poll.until(within: .seconds(10)) { answers().count == 3 })
            try await connection.close()

            let fresh = try await RawHTTP2Connection(to: fixture.server)
            try await fresh.write(try Self.push(on: fresh, stream: 1, token: second))
            try #require(await Poll.until(within: .seconds(10)) { answers().count == 4 })
            try await fresh.close()
            #expect(answers() == ["200 -", "403 UnrelatedKeyIdInToken", "200 -", "200 -"])
        }
    }
}
