@testable import APNsGateway
import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Testing

/// An outage or a refused credential pauses the apps of that credential only: as a value given
/// instants (``CredentialPauses``), and a dispatcher with two credentials, one of whose peers is
/// taken away.
@Suite(.timeLimit(.minutes(2))) struct CredentialPauseTests {
    /// A whole second, so that an instant reached in steps equals the same instant reached at once.
    let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    func at(_ seconds: Double) -> Date { start + .milliseconds(Int((seconds * 1000).rounded())) }

    @Test func onlyThePausedCredentialIsLeftOutAndProbedAlone() {
        var pauses = CredentialPauses()
        #expect(pauses.claims(at: at(0)) == ([], []))
        #expect(
            pauses.failed("team-b", .credentials, retryAfter: nil, at: at(0), jitter: 1)
                == .paused(.credentials, until: at(1)))
        #expect(pauses.claims(at: at(0.5)) == (["team-b"], []))
        #expect(!pauses.mayStart("team-b", at: at(0.5)) && pauses.mayStart("team-a", at: at(0.5)))
        #expect(pauses.cause(of: "team-b") == .credentials && pauses.cause(of: "team-a") == nil)
        #expect(pauses.status(at: at(0.5)) == .paused(.credentials, probeIn: .milliseconds(500)))
        // Its pause over: its probe, and its apps still out of the batch until the probe answers.
        #expect(pauses.claims(at: at(1)) == (["team-b"], ["team-b"]))
        #expect(pauses.claims(at: at(1.1)) == (["team-b"], []), "one probe at a time")
        // Another credential's answer does not end it; its own does.
        #expect(pauses.answered("team-a") == nil)
        #expect(pauses.answered("team-b") == .resumed(after: .credentials))
        #expect(pauses.claims(at: at(1.2)) == ([], []))
        #expect(pauses.status(at: at(1.2)) == .sending)
    }

    @Test(arguments: Backend.allCases)
    func anAppWhosePeerIsGoneWaitsWhileAnotherCredentialsAppIsSent(_ backend: Backend) async throws {
        let authority = try MockCertificateAuthority()
        let keyA = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1")
        let keyB = MockCertificateAuthority.makeSigningKey(teamID: "TEAMBBBBB1", keyID: "KEYBBBBBB1")
        func peer(_ key: MockCertificateAuthority.SigningKey) async throws -> (MockAPNsServer, OutageTests.Peer) {
            var configuration = MockAPNsServer.Configuration(signingKeys: [key])
            configuration.certificateAuthority = authority
            configuration.strict = true
            let server = try await MockAPNsServer.start(configuration)
            configuration.port = server.port
            let unused = try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: .sandbox)
            return (server, OutageTests.Peer(configuration: configuration, connector: unused))
        }
        let (serverA, _) = try await peer(keyA)
        let (serverB, peerB) = try await peer(keyB)
        let held = try await peerB.takeAway(serverB)

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
        // A pool of one: a loaded machine can make the mock's streams cycle slowly, and a test
        // that paces its sends must not meet a connection added for it.
        transport.additionalConnectionsWhenSlow = 0
        transport.trustedCertificateAuthority = .pem(authority.certificatePEM)
        let reports = AwaitableReports()
        let connectors = CredentialConnectors(
            store: queue.store, vault: vault, fallback: nil, transport: transport, logger: reports.logger,
            refreshInterval: .milliseconds(200))
        try await connectors.refresh()
        var settings = Dispatcher.Configuration()
        settings.pollInterval = .milliseconds(100)
        settings.lease = .seconds(40)
        let dispatcher = Dispatcher(
            store: queue.store, connectors: connectors, configuration: settings, logger: reports.logger,
            metricsFactory: reports.metrics)
        let now = Date()
        #expect(
            try await queue.store.enqueue(
                FairnessTests.notification("b", app: "com.example.b", devices: 0..<50, at: now),
                maximumQueueDepth: 1_000)
                == .accepted)
        let running = Task { try await dispatcher.run() }
        dispatcher.wake()
        await reports.until { !$0.lines(OutageTests.paused).isEmpty }
        let notice = try #require(reports.lines(OutageTests.paused).first)
        #expect(notice.metadata["credential"]?.description == "team-b")

        // A's notification, queued during B's outage, goes out at once.
        #expect(
            try await queue.store.enqueue(
                FairnessTests.notification("a", app: "com.example.a", devices: 0..<50, at: Date()),
                maximumQueueDepth: 1_000) == .accepted)
        dispatcher.wake()
        await reports.until { $0.counter("apns_gateway_device_sends_total", ["app": "com.example.a"]) >= 50 }
        #expect(
            reports.counter("apns_gateway_device_sends_total", ["app": "com.example.a", "result": "accepted"]) == 50)
        let waiting = try #require(try await queue.store.progress(of: "b")).deliveries
        #expect(waiting.allSatisfy { $0.state != "done" && $0.attempts == 0 }, "\(waiting.prefix(2))")
        #expect(serverA.requests.count == 50)
        guard case .paused(.unreachable, _) = dispatcher.status else {
            Issue.record("readiness says \(dispatcher.status) during B's outage")
            return
        }

        // B's peer back: its probe finds it, and B's wait is over.
        let serverB2 = try await peerB.bringBack(held)
        await reports.until {
            $0.counter("apns_gateway_device_sends_total", ["app": "com.example.b", "result": "accepted"]) >= 50
        }
        #expect(reports.lines(OutageTests.resumed).first?.metadata["credential"]?.description == "team-b")
        #expect(dispatcher.status == .sending)
        running.cancel()
        _ = try? await running.value
        await connectors.shutdown()
        try await serverA.stop()
        try await serverB2.stop()
        await queue.remove()
    }
}
