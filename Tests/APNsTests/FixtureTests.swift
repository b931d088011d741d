import APNs
import Testing

/// The scoped fixture cleans up whatever the test does: a body that throws (or whose expectations
/// fail) still has its server stopped and its connectors shut down, so nothing leaks into later
/// tests.
@Suite struct FixtureTests {
    struct Stop: Error {}

    @Test func aBodyThatThrowsStillStopsTheServerAndShutsTheConnectorsDown() async throws {
        let kept = Locked<(environment: APNsEnvironment, keyPEM: String, connector: TokenConnector)?>(nil)
        do {
            try await Fixture.with { fixture in
                let connector = try fixture.tokenConnector()
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                kept.withLock { $0 = (fixture.environment, fixture.signingKey.privateKeyPEM, connector) }
                throw Stop()
            }
            Issue.record("the body's error was not rethrown")
        } catch is Stop {}
        let (environment, keyPEM, connector) = try #require(kept.withLock { $0 })
        // The connector was shut down: a send fails at once, not sent.
        do throws(APNsError) {
            try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            Issue.record("a connector the fixture made still sends")
        } catch {
            #expect(transportFailure(error)?.kind == .shutDown)
            #expect(transportFailure(error)?.delivery == .notSent)
        }
        // The server was stopped: nothing listens on its port any more.
        var transport = TransportConfiguration()
        transport.connectTimeout = .seconds(2)
        let fresh = try TokenConnector(
            teamID: Fixture.teamID, keyID: Fixture.keyID, key: .pem(keyPEM), environment: environment,
            transport: transport)
        do throws(APNsError) {
            try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: fresh, to: .test)
            Issue.record("the fixture's server still answers")
        } catch {
            #expect(transportFailure(error)?.kind == .connect)
        }
        await fresh.shutdown()
    }
}
