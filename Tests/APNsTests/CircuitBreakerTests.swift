import APNs
import APNsMockServer
import Foundation
import Testing

/// Failing fast while the path to APNs is broken, and closing again once a probe gets through.
@Suite struct CircuitBreakerTests {
    let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")

    /// A port where nothing listens, and a token connector to it, signing with `key`, whose breaker
    /// has opened after three failures, for `coolDown`.
    static func unreachable(
        signingWith key: MockCertificateAuthority.SigningKey, coolDown: Duration
    ) async throws -> (TokenConnector, port: Int, MockCertificateAuthority) {
        let silent = try await SilentServer.start()
        let port = silent.port
        try await silent.stop()  // nothing listens there now
        let authority = try MockCertificateAuthority()
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: port),
            transport: TransportConfiguration(
                trustedCertificateAuthority: .pem(authority.certificatePEM),
                circuitBreaker: CircuitBreakerPolicy(
                    failureThreshold: 3, initialCoolDown: coolDown, maximumCoolDown: coolDown)))
        let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
        for _ in 0..<3 {
            let error = await #expect(throws: APNsError.self) {
                try await send(notification, via: connector, to: .test)
            }
            #expect(error.flatMap(transportFailure)?.kind == .connect)
        }
        #expect(connector.circuitTrips == 1)
        return (connector, port, authority)
    }

    /// Open, a send fails at once, without the network, never sent. The cool-down is one no run of
    /// these tests outlasts: when the breaker lets a probe through is CircuitBreakerStateTests'
    /// to check, given the time.
    @Test func unreachableHostOpensTheCircuit() async throws {
        let (connector, _, _) = try await Self.unreachable(signingWith: key, coolDown: .seconds(600))
        let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
        let fast = await #expect(throws: APNsError.self) { try await send(notification, via: connector, to: .test) }
        let failure = try #require(fast.flatMap(transportFailure))
        #expect(failure.kind == .circuitOpen)
        #expect(failure.delivery == .notSent)
        #expect(failure.message.hasPrefix("the circuit breaker is open after 3 consecutive failures (last: connect:"))
        #expect(connector.circuitTrips == 1)
        await connector.shutdown()
    }

    /// The server comes back on the same port; the first send after the cool-down is the probe,
    /// and its success closes the circuit. The cool-down is the shortest the policy accepts, so
    /// it is over before the server has started: no waiting for it.
    @Test func aProbeThatGetsThroughClosesTheCircuit() async throws {
        let (connector, port, authority) = try await Self.unreachable(signingWith: key, coolDown: .milliseconds(1))
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.port = port
        configuration.certificateAuthority = authority
        let server = try await MockAPNsServer.start(configuration)
        let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
        #expect(try await send(notification, via: connector, to: .test).status == 200)
        #expect(try await send(notification, via: connector, to: .test).status == 200)
        #expect(connector.circuitTrips == 1)
        #expect(server.streamCount == 2)
        await connector.shutdown()
        try await server.stop()
    }

    /// A token connector whose key the server does not know (as after revoking it): 403
    /// InvalidProviderToken for every send.
    /// The default threshold, with a cool-down no run of these tests outlasts: how many sends
    /// reach the server does not depend on how fast the machine is.
    static func revokedKeyConnector(
        _ fixture: Fixture,
        circuitBreaker: CircuitBreakerPolicy? = CircuitBreakerPolicy(
            initialCoolDown: .seconds(600), maximumCoolDown: .seconds(600))
    ) throws -> TokenConnector {
        let stranger = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000009")
        var transport = fixture.transport
        transport.circuitBreaker = circuitBreaker
        return try TokenConnector(
            teamID: stranger.teamID, keyID: stranger.keyID, key: .pem(stranger.privateKeyPEM),
            environment: fixture.environment,
            transport: transport)
    }

    /// A revoked key: after the threshold, sends fail fast instead of a 403 each.
    @Test func refusedCredentialsOpenTheCircuit() async throws {
        try await Fixture.with { fixture in
            let connector = try Self.revokedKeyConnector(fixture)
            var rejected = 0
            var failedFast = 0
            for _ in 0..<20 {
                do throws(APNsError) {
                    try await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                } catch .rejected(let rejection) {
                    #expect(rejection.reason == .invalidProviderToken)
                    rejected += 1
                } catch {
                    #expect(transportFailure(error)?.kind == .circuitOpen)
                    failedFast += 1
                }
            }
            #expect(rejected == 5)
            #expect(failedFast == 15)
            #expect(fixture.server.streamCount == 5)
            await connector.shutdown()
        }
    }

    /// The same for a bulk send: a million devices would not mean a million 403s.
    @Test func bulkSendToARevokedKeyStopsEarly() async throws {
        try await Fixture.with { fixture in
            let connector = try Self.revokedKeyConnector(fixture)
            var outcomes = 0
            var circuitOpen = 0
            for try await outcome in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector,
                to: BulkSendTests.devices(5_000), maximumInFlight: 64)
            {
                outcomes += 1
                if outcome.transportFailure?.kind == .circuitOpen { circuitOpen += 1 }
            }
            #expect(outcomes == 5_000)
            #expect(fixture.server.streamCount < 200)
            #expect(circuitOpen == 5_000 - fixture.server.streamCount)
            await connector.shutdown()
        }
    }

    @Test func noBreakerWhenTurnedOff() async throws {
        try await Fixture.with { fixture in
            let connector = try Self.revokedKeyConnector(fixture, circuitBreaker: nil)
            for _ in 0..<10 {
                await expectRejection(.invalidProviderToken, status: 403) {
                    try await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                }
            }
            #expect(fixture.server.streamCount == 10)
            await connector.shutdown()
        }
    }
}
