@testable import APNsGateway
import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Testing

/// Each credential sends in its own lane: one whose upstream hangs holds only its own sends, and
/// the silence pauses it. As a value given what starts and ends (``SendingLanes``), and a
/// dispatcher with two teams, one of whose peers stops answering.
@Suite(.timeLimit(.minutes(2))) struct SendingIsolationTests {
    @Test func aCredentialWithoutRoomForAClaimIsLeftOutUntilItsSendsEnd() {
        var lanes = SendingLanes(perCredential: 4_000, claimBatch: 2_000)
        #expect(lanes.full.isEmpty)
        lanes.started("team-a", count: 2_000)
        #expect(lanes.full.isEmpty, "a second claim still fits")
        lanes.started("team-a", count: 1_500)
        lanes.started("team-b", count: 10)
        #expect(lanes.full == ["team-a"] && lanes.total == 3_510)
        // Ending sends wakes the dispatcher only when the lane has room for a claim again.
        let ends = [
            lanes.ended("team-a", count: 500), lanes.ended("team-a", count: 1_000), lanes.ended("team-b", count: 10),
        ]
        #expect(ends == [false, true, false])
        #expect(lanes.full.isEmpty && lanes.inFlight == ["team-a": 2_000])
        let beyond = lanes.ended("team-a", count: 5_000)
        #expect(!beyond && lanes.inFlight.isEmpty)
        // One batch at a time: a credential with anything in flight waits for it.
        var single = SendingLanes(perCredential: 100, claimBatch: 100)
        single.started("team-a", count: 1)
        #expect(single.full == ["team-a"])
        let room = single.ended("team-a", count: 1)
        #expect(room)
    }

    /// App A's peer answers 200 requests and then holds every other without answering; app B is
    /// another team on another peer. B's one push, queued while A's 2,800 unanswered sends are
    /// on the wire, is sent and accepted before any of them reaches its deadline (before, the
    /// dispatcher's two batch slots waited for A's sends, and B for them). When A's deadlines
    /// pass, its sends end `unknown` and its sending pauses: said in the log, the metric and
    /// readiness.
    @Test(arguments: Backend.allCases)
    func aHungUpstreamHoldsOnlyItsOwnLane(_ backend: Backend) async throws {
        let authority = try MockCertificateAuthority()
        let keyA = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1")
        let keyB = MockCertificateAuthority.makeSigningKey(teamID: "TEAMBBBBB1", keyID: "KEYBBBBBB1")
        func peer(_ key: MockCertificateAuthority.SigningKey) async throws -> MockAPNsServer {
            var configuration = MockAPNsServer.Configuration(signingKeys: [key])
            configuration.certificateAuthority = authority
            configuration.strict = true
            return try await MockAPNsServer.start(configuration)
        }
        let serverA = try await peer(keyA)
        let serverB = try await peer(keyB)
        serverA.inject(.neverAnswerAfter(requests: 200))

        let queue = try await TestStore(backend)
        let vault = try CredentialVault(key: Array(repeating: 9, count: 32))
        for (name, key, server, app) in [
            ("team-a", keyA, serverA, "com.example.a"), ("team-b", keyB, serverB, "com.example.b"),
        ] {
            let credential = StoredCredential(
                name: name, kind: .token, teamID: key.teamID, keyID: key.keyID, environments: [.sandbox],
                apnsHost: "\(server.host):\(server.port)",
                sealed: try vault.seal(.signingKey(pem: key.privateKeyPEM), for: name, revision: 1), fingerprint: "-",
                revision: 1, apps: [app], updatedAt: Date())
            #expect(try await queue.store.saveCredential(credential, replacing: nil))
        }
        var transport = TransportConfiguration()
        transport.trustedCertificateAuthority = .pem(authority.certificatePEM)
        let reports = AwaitableReports()
        let connectors = CredentialConnectors(
            store: queue.store, vault: vault, fallback: nil, transport: transport, logger: reports.logger,
            refreshInterval: .milliseconds(200))
        try await connectors.refresh()
        var settings = Dispatcher.Configuration()
        settings.pollInterval = .milliseconds(100)
        // Deadlines far beyond what B's send takes on a busy machine, so that the order below
        // says which send waited for which.
        settings.timeout = .seconds(20)
        settings.lease = .seconds(24)
        let dispatcher = Dispatcher(
            store: queue.store, connectors: connectors, configuration: settings, logger: reports.logger,
            metricsFactory: reports.metrics)
        for batch in 0..<6 {
            let devices = (batch * 500)..<((batch + 1) * 500)
            #expect(
                try await queue.store.enqueue(
                    FairnessTests.notification("a\(batch)", app: "com.example.a", devices: devices, at: Date()),
                    maximumQueueDepth: 10_000) == .accepted)
        }
        let running = Task { try await dispatcher.run() }
        dispatcher.wake()
        // A's sends are on the wire: 200 answered, the rest held.
        #expect(await serverA.arrivals(count: 1_000, within: .seconds(60)))
        #expect(
            reports.counter("apns_gateway_device_sends_total", ["app": "com.example.a", "result": "accepted"]) <= 200)

        #expect(
            try await queue.store.enqueue(
                FairnessTests.notification("b", app: "com.example.b", devices: 0..<1, at: Date()),
                maximumQueueDepth: 10_000) == .accepted)
        dispatcher.wake()
        await reports.until {
            $0.counter("apns_gateway_device_sends_total", ["app": "com.example.b", "result": "accepted"]) >= 1
        }
        // Not one of A's held sends had reached its deadline when B's was accepted.
        #expect(
            reports.counter("apns_gateway_device_sends_total", ["app": "com.example.a", "result": "failed"]) == 0)
        #expect(serverB.requests.map(\.status) == [200])

        // A's deadlines pass: its sends end unknown (they may have been delivered), and its
        // sending pauses for the silence, B's does not.
        let pausedLine =
            "sending paused: APNs does not answer (sends timed out after they were written); device-sends wait without spending attempts"
        await reports.until { !$0.lines(pausedLine).isEmpty }
        #expect(reports.lines(pausedLine).first?.metadata["credential"]?.description == "team-a")
        #expect(reports.lines(pausedLine).count == 1)
        guard case .paused(.unanswered, _) = dispatcher.status else {
            Issue.record("readiness says \(dispatcher.status) while A's peer is silent")
            return
        }
        // Every device-send A's peer received (held unanswered, or answered) is answered,
        // finished `unknown` (it may have been delivered), or on the wire still. None it received
        // is called not sent or queued again; what it never received may be (its deadline passed
        // before it was written), and waits for the pause's end.
        // Outcomes are counted once written: wait for the first of A's to be in the queue.
        await reports.until {
            $0.counter("apns_gateway_device_sends_total", ["app": "com.example.a", "result": "failed"]) >= 1
        }
        var received = 0
        var unknown = 0
        for batch in 0..<6 {
            let deliveries = try #require(try await queue.store.progress(of: "a\(batch)")).deliveries
            for (position, delivery) in deliveries.enumerated() {
                #expect(delivery.token == String(format: "%064x", batch * 500 + position))
                let id = Dispatcher.apnsID(notification: "a\(batch)", position: position).description
                guard serverA.processedCount(apnsID: id) > 0 else { continue }
                received += 1
                if delivery.delivery == "unknown" { unknown += 1 }
                // Received and held: done (answered, or `unknown`), or still on the wire (the pause's
                // probe, its row showing the try before).
                #expect(delivery.state != "queued", "\(delivery)")
                if delivery.state == "done" { #expect(delivery.delivery != "not-sent", "\(delivery)") }
            }
        }
        #expect(received >= 1_000 && unknown > 0, "\(received) received, \(unknown) unknown")
        running.cancel()
        _ = try? await running.value
        await connectors.shutdown()
        try await serverA.stop()
        try await serverB.stop()
        await queue.remove()
    }
}
