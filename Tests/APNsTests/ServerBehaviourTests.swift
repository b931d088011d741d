import APNs
import APNsMockServer
import Foundation
import Testing

/// What APNs front ends do besides answering: one stream until the first success, ALPN, slow TLS.
@Suite struct ServerBehaviourTests {
    /// APNs allows one stream on a token connection until a request succeeds; hundreds of sends made
    /// at once wait their turn and then share the raised limit. Through a pool of four too, whose
    /// share of the streams follows the demand: every send goes through once, on the pool's
    /// connections and no other, although each first allows one stream (libcurl parks what finds
    /// no room and takes it up again later). How many of the four it opens depends on how many
    /// requests it wrote before reading the server's SETTINGS, which limit nothing until the
    /// client acknowledges them (RFC 9113). The answers come half a second late, so the sends are
    /// all in flight together.
    @Test(arguments: [1, 4]) func oneStreamUntilFirstSuccess(connections: Int) async throws {
        try await Fixture.with(adjust: { $0.oneStreamUntilValidToken = true }) { fixture in
            fixture.server.inject(.delay(.milliseconds(500).scaledForSanitizers))
            let connector = try fixture.tokenConnector(adjust: { $0.maximumConnectionsPerHost = connections })
            let ids = (0..<400).map { _ in APNsID() }
            let accepted = await withTaskGroup(of: Bool.self) { group in
                for id in ids {
                    group.addTask {
                        (try? await send(
                            AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: connector,
                            to: .test)) != nil
                    }
                }
                var count = 0
                for await ok in group where ok { count += 1 }
                return count
            }
            #expect(accepted == 400)
            #expect(ids.allSatisfy { fixture.server.processedCount(apnsID: $0.description) == 1 })
            #expect((1...connections).contains(fixture.server.connectionCount))
        }
    }

    /// A server that offers only HTTP/1.1 is not APNs: nothing is written to it.
    @Test func http11OnlyServerGetsNoRequest() async throws {
        try await Fixture.with(adjust: { $0.applicationProtocols = ["http/1.1"] }) { fixture in
            let connector = try fixture.tokenConnector()
            let error = await #expect(throws: APNsError.self) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            let failure = try #require(error.flatMap(transportFailure))
            #expect(failure.kind == .notHTTP2)
            #expect(failure.delivery == .notSent)
            #expect(fixture.server.streamCount == 0)
            #expect(fixture.server.processedCounts.isEmpty)
            await connector.shutdown()
        }
    }

    /// A handshake slower than the connect timeout: not sent; with room, it goes through.
    @Test func slowTLSHandshake() async throws {
        try await Fixture.with(adjust: { $0.tlsHandshakeDelay = .seconds(1) }) { fixture in
            let impatient = try fixture.tokenConnector(adjust: { $0.connectTimeout = .milliseconds(300) })
            let error = await #expect(throws: APNsError.self) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: impatient, to: .test)
            }
            #expect(error.flatMap(transportFailure)?.kind == .timeout)
            #expect(error.flatMap(transportFailure)?.delivery == .notSent)
            let patient = try fixture.tokenConnector(adjust: { $0.connectTimeout = .seconds(5) })
            #expect(
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: patient, to: .test)
                    .status
                    == 200)
            await impatient.shutdown()
            await patient.shutdown()
        }
    }

    /// An idle connection is kept across a gap longer than libcurl's own 118 s default would
    /// allow only when configured so; a short maximum idle time makes a new one.
    @Test func idleConnectionsFollowMaximumIdleTime() async throws {
        try await Fixture.with { fixture in
            let keeping = try fixture.tokenConnector()
            let dropping = try fixture.tokenConnector(adjust: { $0.maximumIdleTime = .seconds(1) })
            for connector in [keeping, dropping] {
                _ = try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            // Real time is the subject: longer than `dropping`'s maximum idle time, which libcurl
            // counts in real time.
            try await Task.sleep(for: .milliseconds(2200))
            for connector in [keeping, dropping] {
                _ = try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            #expect(keeping.connectionsOpened == 1)
            #expect(dropping.connectionsOpened == 2)
            await keeping.shutdown()
            await dropping.shutdown()
        }
    }
}
