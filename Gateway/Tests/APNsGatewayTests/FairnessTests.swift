@testable import APNsGateway
import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Testing

/// Apps take turns: how a claim shares its limit (``FairShares``, a value with no I/O), what each
/// store claims for two apps, and a dispatcher that serves a new app's notification while another
/// app's backlog is being sent.
@Suite struct FairnessTests {
    /// Runs `shares` against apps holding `waiting` due device-sends each; what each took.
    static func run(_ limit: Int, _ waiting: [String: Int], start: Int = 0) -> [String: Int] {
        var left = waiting
        var shares = FairShares(limit: limit, apps: waiting.keys.sorted(), start: start)
        shares.takeAll { app, count in
            let taken = min(count, left[app] ?? 0)
            left[app, default: 0] -= taken
            return taken
        }
        return waiting.mapValues { _ in 0 }.merging(waiting.map { ($0.key, $0.value - (left[$0.key] ?? 0)) }) { $1 }
    }

    @Test func aSmallAppIsServedWholeBesideABacklog() {
        #expect(Self.run(2_000, ["a": 50_000, "b": 1]) == ["a": 1_999, "b": 1])
        #expect(Self.run(2_000, ["a": 10, "b": 5_000, "c": 5_000]) == ["a": 10, "b": 995, "c": 995])
        // What one app cannot take goes to the others, in later rounds.
        #expect(Self.run(2_000, ["a": 300, "b": 900, "c": 5_000]) == ["a": 300, "b": 850, "c": 850])
        // Nothing due: nothing taken, and the rounds end.
        #expect(Self.run(2_000, ["a": 0, "b": 0]) == ["a": 0, "b": 0])
        #expect(Self.run(0, ["a": 5]) == ["a": 0])
    }

    @Test func moreAppsThanTheLimitEachTakeOneFromARotatingStart() {
        let waiting = Dictionary(uniqueKeysWithValues: (0..<5).map { ("app\($0)", 100) })
        let first = Self.run(2, waiting, start: 0)
        #expect(first.values.reduce(0, +) == 2)
        #expect(first.values.allSatisfy { $0 <= 1 })
        #expect(first["app0"] == 1 && first["app1"] == 1)
        let later = Self.run(2, waiting, start: 3)
        #expect(later["app3"] == 1 && later["app4"] == 1)
    }

    static func notification(_ id: String, app: String, devices: Range<Int>, at time: Date) -> QueuedNotification {
        QueuedNotification(
            id: id, keyName: "key", pushType: "alert", app: app,
            storedJSON: #"{"alert":"Hi","bundle-id":"\#(app)","push-type":"alert"}"#,
            tokens: devices.map { String(format: "%064x", $0) }, createdAt: time)
    }

    /// App A's backlog was queued first; app B's one device is in the very next claim, and two
    /// apps with backlogs share a claim evenly.
    @Test(arguments: Backend.allCases)
    func eachClaimServesEveryAppWithWork(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let start = Date()
        for index in 0..<3 {
            let queued = Self.notification(
                "a\(index)", app: "com.example.a", devices: (1_000 * index)..<(1_000 * (index + 1)),
                at: start.addingTimeInterval(Double(index)))
            #expect(try await store.enqueue(queued, maximumQueueDepth: 100_000) == .accepted)
        }
        let late = Self.notification("b", app: "com.example.b", devices: 0..<1, at: start.addingTimeInterval(10))
        #expect(try await store.enqueue(late, maximumQueueDepth: 100_000) == .accepted)
        let now = start.addingTimeInterval(20)
        let first = try await store.claim(owner: "t", limit: 100, now: now, leaseUntil: now.addingTimeInterval(60))
        #expect(first.first { $0.id == "b" }?.deliveries.count == 1, "\(first.map(\.id))")
        #expect(first.reduce(0) { $0 + $1.deliveries.count } == 100)
        // The oldest of A's backlog first.
        #expect(first.first { $0.id != "b" }?.id == "a0")

        let other = Self.notification("c", app: "com.example.c", devices: 0..<500, at: start.addingTimeInterval(11))
        #expect(try await store.enqueue(other, maximumQueueDepth: 100_000) == .accepted)
        let second = try await store.claim(owner: "t", limit: 100, now: now, leaseUntil: now.addingTimeInterval(60))
        let byApp = Dictionary(grouping: second) { $0.id == "c" ? "c" : "a" }.mapValues {
            $0.reduce(0) { $0 + $1.deliveries.count }
        }
        #expect(byApp == ["a": 50, "c": 50])
        await queue.remove()
    }

    /// A dead sender's claims (their lease expired) are taken over in their app's turn, like its
    /// queued device-sends: they do not push other apps out of a claim, and a claim that leaves an
    /// app out (its credential's sending is paused) leaves them out too.
    @Test(arguments: Backend.allCases)
    func expiredLeasesAreTakenInTheirAppsTurn(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let start = Date()
        let backlog = Self.notification("a", app: "com.example.a", devices: 0..<300, at: start)
        #expect(try await store.enqueue(backlog, maximumQueueDepth: 100_000) == .accepted)
        let held = try await store.claim(owner: "dead", limit: 300, now: start, leaseUntil: start.addingTimeInterval(1))
        #expect(held.reduce(0) { $0 + $1.deliveries.count } == 300)
        let late = Self.notification("b", app: "com.example.b", devices: 0..<1, at: start.addingTimeInterval(1))
        #expect(try await store.enqueue(late, maximumQueueDepth: 100_000) == .accepted)

        // A's lease has expired; A is paused: B's one device is all there is to claim.
        let now = start.addingTimeInterval(2)
        let withoutA = try await store.claim(
            owner: "t", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60),
            apps: AppFilter { $0 != "com.example.a" })
        #expect(withoutA.map(\.id) == ["b"])
        #expect(withoutA.first?.deliveries.count == 1)

        // Both apps take part: A's expired device-sends and B's new ones share the claim evenly,
        // the longest due first.
        let more = Self.notification("c", app: "com.example.b", devices: 1..<201, at: start.addingTimeInterval(1.5))
        #expect(try await store.enqueue(more, maximumQueueDepth: 100_000) == .accepted)
        let both = try await store.claim(owner: "t", limit: 100, now: now, leaseUntil: now.addingTimeInterval(60))
        let byNotification = Dictionary(grouping: both, by: \.id).mapValues {
            $0.reduce(0) { $0 + $1.deliveries.count }
        }
        #expect(byNotification == ["a": 50, "c": 50])
        #expect(both.first { $0.id == "a" }?.deliveries.map(\.position) == Array(0..<50))
        // The rest of A's are taken over by later claims, none twice.
        let rest = try await store.claim(owner: "t", limit: 1_000, now: now, leaseUntil: now.addingTimeInterval(60))
        let restOfA = rest.filter { $0.id == "a" }.flatMap(\.deliveries).map(\.position)
        #expect(restOfA.sorted() == Array(50..<300))
        await queue.remove()
    }

    /// The whole gateway's sender: app A's 20,000 device-sends are being sent when app B posts
    /// one; B's is sent and finished while most of A's still wait (first-in first-out across apps
    /// finished A's first).
    @Test(.timeLimit(.minutes(2)), arguments: Backend.allCases)
    func aNewAppIsServedWhileAnotherAppsBacklogIsSent(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let authority = try MockCertificateAuthority()
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.certificateAuthority = authority
        configuration.recordsRequests = false
        let server = try await MockAPNsServer.start(configuration)
        var transport = TransportConfiguration()
        // A pool of one: a loaded machine can make the mock's streams cycle slowly, and a test
        // that paces its sends must not meet a connection added for it.
        transport.additionalConnectionsWhenSlow = 0
        transport.trustedCertificateAuthority = .pem(authority.certificatePEM)
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: server.host, port: server.port), transport: transport)
        let backlog = 20_000
        let created = Date()
        for index in 0..<(backlog / 5_000) {
            let queued = Self.notification(
                "a\(index)", app: "com.example.a", devices: (5_000 * index)..<(5_000 * (index + 1)), at: created)
            #expect(try await store.enqueue(queued, maximumQueueDepth: 1_000_000) == .accepted)
        }
        var settings = Dispatcher.Configuration()
        settings.pollInterval = .milliseconds(50)
        settings.lease = .seconds(40)
        settings.claimBatch = 500
        let dispatcher = Dispatcher(
            store: store, connector: AnyConnector(connector), configuration: settings,
            logger: Logger(label: "fairness"))
        let running = Task { try await dispatcher.run() }
        // Once A's sending has begun, B posts.
        try #require(try await Poll.until { try await store.queueDepth() < backlog })
        #expect(
            try await store.enqueue(
                Self.notification("b", app: "com.example.b", devices: 0..<1, at: Date()), maximumQueueDepth: 1_000_000)
                == .accepted)
        dispatcher.wake()
        var depthWhenBWasDone = 0
        let bWasDone = try await Poll.until {
            let progress = try #require(try await store.progress(of: "b"))
            guard progress.deliveries.allSatisfy({ $0.state == "done" }) else { return false }
            #expect(progress.deliveries.first?.status == 200)
            depthWhenBWasDone = try await store.queueDepth()
            return true
        }
        try #require(bWasDone)
        #expect(depthWhenBWasDone > backlog / 2, "B waited for most of A's backlog")
        running.cancel()
        _ = try? await running.value
        await connector.shutdown()
        try await server.stop()
        await queue.remove()
    }
}
