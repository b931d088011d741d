import APNs
import APNsGateway
import APNsMockServer
import Foundation
import Logging
import Testing

/// Instance names that cannot collide, and leases that could not outlast a send refused: on a real
/// SQLite file and a real PostgreSQL database, with instants the tests give. Nothing here races a
/// clock, so the suite runs beside the others (LeaseTests, whose senders race real heartbeats,
/// runs alone).
@Suite(.timeLimit(.minutes(3))) struct InstanceNameTests {
    /// A name held by a live process is refused; one whose process is gone from this host, or whose
    /// heartbeat stopped a lease ago, is taken over at once with its claims.
    @Test(arguments: Backend.allCases)
    func anInstanceNameIsHeldWhileItsProcessLives(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let tokens = (0..<30).map { String(format: "%064x", $0 + 1) }
        let queued = QueuedNotification(
            id: "n1", keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: "{}", tokens: tokens,
            createdAt: Date())
        #expect(try await store.enqueue(queued, maximumQueueDepth: 100) == .accepted)
        let now = Date()
        let lease = Duration.seconds(60)

        // Another host's instance, its last heartbeat 50 s ago (alive for now), with 10 claims.
        let stale = GatewayInstance(name: "stale", host: "elsewhere.example", processID: 1)
        #expect(
            try await store.register(stale, now: now.addingTimeInterval(-50), staleAfter: lease)
                == .registered(releasedClaims: 0))
        _ = try await store.claim(owner: "stale", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60))

        // A live process (this one) holds "live" and 10 claims; a second start under the name is refused.
        let live = GatewayInstance(name: "live")
        #expect(try await store.register(live, now: now, staleAfter: lease) == .registered(releasedClaims: 0))
        _ = try await store.claim(owner: "live", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60))
        let again = GatewayInstance(name: "live")
        let refused = try await store.register(again, now: now, staleAfter: lease)
        guard case .nameInUse(let host, let processID, let heartbeat) = refused else {
            Issue.record("a live instance's name was taken: \(refused)")
            return
        }
        #expect(host == live.host && processID == live.processID)
        #expect(abs(heartbeat.timeIntervalSince(now)) < 0.001)
        #expect(try await store.heartbeat(live, now: now, leaseUntil: now.addingTimeInterval(60)))
        #expect(try await store.heartbeat(again, now: now, leaseUntil: now.addingTimeInterval(60)) == false)

        // A process that has exited, on this host, with a fresh heartbeat and 10 claims.
        let exited = TestProcess()
        exited.executableURL = URL(fileURLWithPath: "/bin/true")
        try exited.run()
        exited.waitUntilExit()
        let gone = GatewayInstance(name: "gone", processID: exited.processIdentifier)
        #expect(try await store.register(gone, now: now, staleAfter: lease) == .registered(releasedClaims: 0))
        _ = try await store.claim(owner: "gone", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60))

        // A restart under the exited process's name takes back its claims and the stale one's at
        // once; the live one's stay.
        // Twenty seconds later, the stale one has had no heartbeat for 70 s, more than the lease.
        let later = now.addingTimeInterval(20)
        let restarted = GatewayInstance(name: "gone")
        #expect(try await store.register(restarted, now: later, staleAfter: lease) == .registered(releasedClaims: 20))
        #expect(try await store.heartbeat(gone, now: now, leaseUntil: now) == false)
        let progress = try #require(try await store.progress(of: "n1"))
        #expect(progress.deliveries.filter { $0.state == "claimed" }.count == 10)
        #expect(progress.deliveries.filter { $0.state == "queued" }.count == 20)

        // A graceful stop frees the name.
        try await store.unregister(live)
        #expect(try await store.register(again, now: later, staleAfter: lease) == .registered(releasedClaims: 10))
        await queue.remove()
    }

    /// A dispatcher refuses to start under a live instance's name, with a message that says what to do.
    @Test func aSecondLiveInstanceOfTheSameNameRefusesToStart() async throws {
        let queue = try await TestStore(.sqlite)
        var configuration = Dispatcher.Configuration()
        configuration.instance = "one"
        // A live process of this host (this one's parent) holds the name.
        try await queue.store.register(
            GatewayInstance(name: "one", processID: getppid()), now: Date(), staleAfter: .seconds(120)
        ).expectRegistered()
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        // Never used: the start is refused before anything is sent.
        let connector = AnyConnector(
            try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
                environment: .custom(host: "127.0.0.1", port: 9)))
        let dispatcher = Dispatcher(
            store: queue.store, connector: connector, configuration: configuration, logger: Logger(label: "test"))
        await #expect {
            try await dispatcher.run()
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("another live gateway holds the instance name one (process ")
                && text.hasSuffix(
                    "give each running instance its own --instance, or leave it out for a name unique to this process")
        }
        await queue.remove()
    }

    /// A lease that a send could outlast is refused before anything starts.
    @Test func aLeaseShorterThanASendIsRefused() throws {
        var configuration = Dispatcher.Configuration()
        configuration.lease = .seconds(3)
        #expect(throws: DispatcherConfigurationError.self) { try configuration.check() }
        do {
            try configuration.check()
        } catch {
            #expect(
                error.description
                    == "a lease of 3 s is shorter than the send timeout (30 s) plus two heartbeats (2 s): another instance could take over a device-send still on the wire and send it twice. Give a lease of at least 32 s, or a shorter send timeout"
            )
        }
        configuration.timeout = .seconds(1)
        try configuration.check()
        #expect(Dispatcher.Configuration().instance.hasSuffix("-\(ProcessInfo.processInfo.processIdentifier)"))
    }

    /// `apns-gateway serve` refuses a lease a send could outlast before it opens anything.
    @Test func serveRefusesALeaseShorterThanItsTimeout() throws {
        let process = TestProcess()
        process.executableURL = CrashSafetyTests.binary
        process.arguments = ["serve", "--lease-seconds", "3", "--database", "/nonexistent/never-opened.sqlite"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 64)
        #expect(
            text.contains(
                "a lease of 3 s is shorter than the send timeout (30 s) plus two heartbeats (2 s): another instance could take over a device-send still on the wire and send it twice. Give --lease-seconds at least 32 s, or a shorter --timeout"
            ), "\(text)")
    }
}
