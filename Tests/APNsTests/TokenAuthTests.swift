import APNs
import APNsMockServer
import Foundation
import Testing

/// A clock tests can move.
///
/// Thread safety: `Sendable`; the date is behind a `Locked` (ThreadSanitizer sees its pthread mutex).
final class TestClock: Sendable {
    private let now = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    var date: Date { now.withLock { $0 } }
    func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var function: @Sendable () -> Date { { self.date } }
}

@Suite struct TokenAuthTests {
    struct Game: Encodable, Sendable { var gameID: String }

    @Test func alertAndBackgroundByteExactWithTokenVerifiedIndependently() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let alert = AlertNotification(bundleID: Fixture.bundleID, appData: Game(gameID: "12345678")) {
                Alert {
                    Title("Game Request"); Subtitle("Five Card Draw"); Body("Bob wants to play poker")
                }
                Category("GAME_INVITATION")
            }
            let response = try await send(alert, via: connector, to: .test)
            #expect(response.status == 200)
            #expect(response.uniqueID != nil)
            let background = BackgroundNotification(bundleID: Fixture.bundleID, expiration: .immediately)
            try await send(background, via: connector, to: .test)

            let records = fixture.server.requests
            try #require(records.count == 2)
            #expect(records[0].path == Device.test.path)
            #expect(
                records[0].bodyText
                    == #"{"aps":{"alert":{"title":"Game Request","subtitle":"Five Card Draw","body":"Bob wants to play poker"},"category":"GAME_INVITATION"},"gameID":"12345678"}"#
            )
            let token = try #require(records[0][header: "authorization"])
            #expect(
                records[0].headers.map(\.name) == [
                    "authorization", "apns-push-type", "apns-topic", "apns-priority", "content-length",
                ])
            #expect(
                Array(records[0].headers.dropFirst()) == (try alert.request(to: .test)).headers + [
                    .init(name: "content-length", value: String(try alert.payload().count))
                ])
            #expect(
                records[1].headers.dropFirst().map(\.description) == [
                    "apns-push-type: background", "apns-topic: com.example.app", "apns-priority: 5",
                    "apns-expiration: 0",
                    "content-length: 31",
                ])
            #expect(records[1].bodyText == #"{"aps":{"content-available":1}}"#)
            // The server verified the ES256 signature with swift-crypto, not with the client's OpenSSL.
            guard case .token(let teamID, let keyID, _) = records[0].authentication else {
                Issue.record("not token-authenticated: \(records[0].authentication)")
                return
            }
            #expect(teamID == Fixture.teamID && keyID == Fixture.keyID)
            // The token is shared: both requests carried the same one.
            #expect(records[1][header: "authorization"] == token)
            let parts = token.dropFirst("bearer ".count).split(separator: ".")
            #expect(parts.count == 3)
            // {"alg":"ES256","kid":"KEY0000001"}
            #expect(String(parts[0]) == "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTAwMDAwMDEifQ")
        }
    }

    @Test func tokenIsReusedThenRemintedAfterTheRefreshInterval() async throws {
        let clock = TestClock()
        try await Fixture.with(adjust: { configuration in configuration.clock = clock.function }) { fixture in
            let connector = try fixture.tokenConnector(clock: clock.function)
            let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
            try await send(notification, via: connector, to: .test)
            clock.advance(by: 49 * 60)
            try await send(notification, via: connector, to: .test)
            clock.advance(by: 2 * 60)  // 51 minutes: past the 50-minute default
            try await send(notification, via: connector, to: .test)
            let tokens = fixture.server.requests.compactMap { $0[header: "authorization"] }
            #expect(tokens.count == 3)
            #expect(tokens[0] == tokens[1])
            #expect(tokens[1] != tokens[2])
        }
    }

    @Test func remintingTooOftenIsRejectedByTheServer() async throws {
        let clock = TestClock()
        try await Fixture.with(adjust: { configuration in configuration.clock = clock.function }) { fixture in
            let first = try fixture.tokenConnector(clock: clock.function)
            try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: first, to: .test)
            clock.advance(by: 60)
            // A second connector for the same key mints a new token a minute later.
            let second = try fixture.tokenConnector(clock: clock.function)
            await expectRejection(.tooManyProviderTokenUpdates, status: 429) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: second, to: .test)
            }
        }
    }

    @Test func tokenOlderThanAnHourIsExpired() async throws {
        let serverClock = TestClock()
        let clientClock = TestClock()
        clientClock.advance(by: -2 * 3600)  // the client's clock is two hours behind
        try await Fixture.with(adjust: { configuration in configuration.clock = serverClock.function }) { fixture in
            let connector = try fixture.tokenConnector(clock: clientClock.function)
            do throws(APNsError) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                Issue.record("expected a rejection")
            } catch {
                guard case .rejected(let rejection) = error else { throw error }
                #expect(rejection.status == 403)
                #expect(rejection.reason == .expiredProviderToken)
                #expect(rejection.description.contains("check the server's clock"))
            }
            // A fresh token cannot help (it is younger than 20 minutes), so it was not retried.
            #expect(fixture.server.requests.count == 1)
        }
    }

    /// A connector whose token was sent once, then clocks that make the server call it expired:
    /// 25 minutes later on the client (so the token is kept), 61 on the server.
    func expiredTokenSetUp() async throws -> (Fixture, TokenConnector, AlertNotification<NoAppData>) {
        let serverClock = TestClock()
        let clientClock = TestClock()
        let fixture = try await Fixture.start { configuration in configuration.clock = serverClock.function }
        let connector = try fixture.tokenConnector(clock: clientClock.function)
        let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
        try await send(notification, via: connector, to: .test)
        clientClock.advance(by: 25 * 60)
        serverClock.advance(by: 61 * 60)
        return (fixture, connector, notification)
    }

    @Test func expiredTokenIsReplacedAndRetriedOnceForSingleAndBulkSends() async throws {
        let (fixture, connector, notification) = try await expiredTokenSetUp()
        let first = try await send(notification, via: connector, to: .test)
        #expect(first.status == 200)
        let devices = BulkSendTests.devices(40)
        var accepted = 0
        for try await outcome in try bulkSendOutcomes(notification, via: connector, to: devices)
        where outcome.isAccepted { accepted += 1 }
        #expect(accepted == 40)
        let tokens = fixture.server.requests.compactMap { $0[header: "authorization"] }
        let original = tokens[0]
        // The rejected single send and its retry, then the bulk send: all on the fresh token.
        #expect(tokens.count == 1 + 2 + 40)
        #expect(tokens[1] == original)
        #expect(tokens[2...].allSatisfy { $0 != original })
        try await fixture.stop()
    }

    @Test func expiredTokenInTheMiddleOfABulkSendIsRetriedPerDevice() async throws {
        let (fixture, connector, notification) = try await expiredTokenSetUp()
        var outcomes: [String: Bool] = [:]
        for try await outcome in try bulkSendOutcomes(
            notification, via: connector, to: BulkSendTests.devices(300), maximumInFlight: 50)
        {
            outcomes[outcome.device.token] = outcome.isAccepted
        }
        #expect(outcomes.count == 300)
        #expect(outcomes.values.allSatisfy { $0 })
        // Each device was sent at most twice: once with the expired token, once with the fresh one.
        let paths = Dictionary(grouping: fixture.server.requests.dropFirst().map(\.path), by: { $0 })
        #expect(paths.count == 300)
        #expect(paths.values.allSatisfy { $0.count <= 2 })
        try await fixture.stop()
    }

    @Test func unknownKeyIsRejected() async throws {
        try await Fixture.with { fixture in
            let stranger = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: "KEY0000009")
            let connector = try TokenConnector(
                teamID: stranger.teamID, keyID: stranger.keyID, key: .pem(stranger.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport)
            await expectRejection(.invalidProviderToken, status: 403) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
        }
    }
}
