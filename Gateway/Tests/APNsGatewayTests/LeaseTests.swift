import APNs
import APNsGateway
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Testing

/// Leases that live while their sender does: on a real SQLite file and a real PostgreSQL
/// database. (Instance names and refused leases: `InstanceNameTests`.) The lease's decisions are ``SenderLease``'s, checked
/// with given instants in `SenderLeaseTests`; here real senders race real heartbeats, and the
/// tests wait for what the senders report (``AwaitableReports``), not on a clock.
@Suite(.timeLimit(.minutes(3))) struct LeaseTests {
    /// Device-sends a dispatcher reporting to `reports` has finished (accepted, refused, failed or
    /// expired), and those it queued again.
    static func finished(_ reports: AwaitableReports) -> Int64 {
        reports.counter("apns_gateway_device_sends_total")
            - reports.counter("apns_gateway_device_sends_total", ["result": "requeued"])
    }

    /// Two live senders on one queue with a 3 s lease, each batch taking longer than the lease to
    /// send: the heartbeat renews what each holds, so neither takes the other's work over.
    @Test(arguments: Backend.allCases)
    func twoLiveInstancesWithAShortLeaseNeverSendTwice(_ backend: Backend) async throws {
        // 20 streams, 100 ms an answer: about 200 device-sends a second for both senders together,
        // so a batch of 500 takes 2.5–5 s.
        let setup = try await GatewayAPITests.Setup.start(
            backend, transport: { $0.maximumConcurrentStreams = 20 })
        setup.server.inject(.delay(.milliseconds(100)))
        try await Self.enqueue(devices: 2_000, on: setup.store)
        let connector = AnyConnector(setup.connector)
        let reports = AwaitableReports()
        try await setup.queue.withSecondStore { second in
            var configuration = Self.shortLease(claimBatch: 500, timeout: .seconds(2))
            try configuration.check()
            configuration.instance = "lease-a"
            let a = Dispatcher(
                store: setup.store, connector: connector, configuration: configuration, logger: Logger(label: "a"),
                metricsFactory: reports.metrics)
            configuration.instance = "lease-b"
            let b = Dispatcher(
                store: second, connector: connector, configuration: configuration, logger: Logger(label: "b"),
                metricsFactory: reports.metrics)
            let runs = [Task { try await a.run() }, Task { try await b.run() }]
            a.wake()
            b.wake()
            await reports.until { Self.finished($0) >= 2_000 }
            for run in runs { run.cancel() }
            for run in runs { _ = await run.result }
        }
        #expect(try await setup.store.queueDepth() == 0)
        var perToken: [String: Int] = [:]
        for request in setup.server.requests { perToken[request.path, default: 0] += 1 }
        #expect(perToken.count == 2_000)
        let twice = perToken.values.filter { $0 > 1 }.count
        #expect(twice == 0, "\(twice) device-sends sent twice")
        let progress = try #require(try await setup.store.progress(of: "n1"))
        // Every device-send finished, accepted or — when a machine loaded far past its two cores
        // answers after the 2 s deadline (seen once beside a soak run and four busy processes) —
        // failed as possibly delivered, never queued again.
        let unfinished = progress.deliveries.filter {
            !($0.state == "done" && ($0.status == 200 || $0.delivery == "unknown"))
        }
        #expect(unfinished.isEmpty, "\(unfinished.prefix(3))")
        #expect(progress.deliveries.contains { $0.status == 200 })
        try await setup.stop()
    }

    /// A sender whose lease cannot be renewed (its heartbeat fails while its other writes work)
    /// stops starting sends before the lease could run out: what it started ends by its deadline,
    /// what it never started is queued again as not sent, and the healthy sender finishes the
    /// queue without sending anything twice.
    @Test func aSenderThatCannotRenewItsLeaseStopsStartingSends() async throws {
        let setup = try await GatewayAPITests.Setup.start(.sqlite, transport: { $0.maximumConcurrentStreams = 20 })
        setup.server.inject(.delay(.milliseconds(200)))
        try await Self.enqueue(devices: 1_500, on: setup.store)
        // The connection and token first, so the sender's first 5 s go to sending even on a busy
        // machine (its lease allows starting sends only that long; 2.5 s was not always enough for a
        // first send at a load of 8 on two cores).
        let warmUp = try Device(token: String(repeating: "f", count: 64))
        _ = try await send(
            AlertNotification(bundleID: "com.example.app") { Alert("warm-up") }, via: setup.connector, to: warmUp)
        let connector = AnyConnector(setup.connector)
        var configuration = Self.shortLease(claimBatch: 1_000, timeout: .seconds(2), lease: .seconds(10))
        configuration.instance = "cannot-renew"
        let failingReports = AwaitableReports()
        let failing = Dispatcher(
            store: HeartbeatFails(setup.store), connector: connector, configuration: configuration,
            logger: failingReports.logger, metricsFactory: failingReports.metrics)
        let stuck = Task { try await failing.run() }
        failing.wake()
        // It claims 1,000 and sends at most 100 a second: the lease comes into doubt after 5 s (about
        // 500 sent); it stops starting sends, and every one of the 1,000 ends, sent or queued again.
        await failingReports.until {
            !$0.lines("the lease could run out before a send ends: no new sends until it is renewed").isEmpty
        }
        await failingReports.until { $0.counter("apns_gateway_device_sends_total") >= 1_000 }
        let progress = try #require(try await setup.store.progress(of: "n1"))
        let done = progress.deliveries.filter { $0.state == "done" }.count
        let requeued = progress.deliveries.filter { $0.state == "queued" && $0.delivery == "not-sent" }.count
        #expect(done > 0 && done < 1_000, "\(done) sent before it stopped")
        #expect(done + requeued == 1_000, "\(done) done, \(requeued) queued again as not sent")
        #expect(setup.server.requests.count == done + 1)  // and the warm-up
        configuration.instance = "healthy"
        let reports = AwaitableReports()
        let healthy = Dispatcher(
            store: setup.store, connector: connector, configuration: configuration, logger: Logger(label: "healthy"),
            metricsFactory: reports.metrics)
        let running = Task { try await healthy.run() }
        healthy.wake()
        await reports.until { Self.finished($0) >= Int64(1_500 - done) }
        stuck.cancel()
        running.cancel()
        _ = await stuck.result
        _ = await running.result
        var perToken: [String: Int] = [:]
        for request in setup.server.requests where request.path != "/3/device/\(warmUp.token)" {
            perToken[request.path, default: 0] += 1
        }
        let final = try #require(try await setup.store.progress(of: "n1"))
        let odd = final.deliveries.filter { $0.state != "done" || $0.status != 200 }
        #expect(odd.isEmpty, "\(odd)")
        #expect(perToken.count == 1_500)
        #expect(perToken.values.allSatisfy { $0 == 1 }, "\(perToken.values.filter { $0 > 1 }.count) sent twice")
        try await setup.stop()
    }

    /// Queues an alert `id` for `devices` devices (tokens numbered from `firstToken`), with an
    /// `expiration` in UNIX seconds if given.
    static func enqueue(
        devices: Int, on store: any GatewayStore, id: String = "n1", expiration: Int? = nil, firstToken: Int = 1
    ) async throws {
        let tokens = (0..<devices).map { String(format: "%064x", $0 + firstToken) }
        var body = GatewayAPITests.alert(to: tokens)
        if let expiration {
            body = body.replacingOccurrences(of: #""push-type""#, with: #""expiration":\#(expiration),"push-type""#)
        }
        let request = try NotificationRequest(body: Array(body.utf8), maximumDevices: 5_000)
        let queued = QueuedNotification(
            id: id, keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: request.storedJSON,
            tokens: tokens, createdAt: Date())
        #expect(try await store.enqueue(queued, maximumQueueDepth: 10_000) == .accepted)
    }

    /// A short lease (3 s) renewed every 0.5 s, one batch at a time.
    static func shortLease(
        claimBatch: Int, timeout: Duration, lease: Duration = .seconds(3)
    ) -> Dispatcher.Configuration {
        var configuration = Dispatcher.Configuration()
        configuration.claimBatch = claimBatch
        configuration.concurrentBatches = 1
        configuration.lease = lease
        configuration.heartbeat = .milliseconds(500)
        configuration.timeout = timeout
        configuration.pollInterval = .milliseconds(200)
        return configuration
    }
}

extension InstanceRegistration {
    func expectRegistered(sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .registered = self else {
            Issue.record("not registered: \(self)", sourceLocation: sourceLocation)
            return
        }
    }
}

/// A store whose heartbeat always fails (a database that takes every write but that one): the
/// rest goes to `base`.
struct HeartbeatFails: GatewayStore {
    let base: any GatewayStore
    init(_ base: any GatewayStore) { self.base = base }

    struct Refused: Error {}

    func heartbeat(_ instance: GatewayInstance, now: Date, leaseUntil: Date) async throws -> Bool { throw Refused() }
    func prepare() async throws { try await base.prepare() }
    func addAPIKey(_ key: APIKey) async throws { try await base.addAPIKey(key) }
    func apiKey(hash: String) async throws -> APIKey? { try await base.apiKey(hash: hash) }
    func apiKeys() async throws -> [APIKey] { try await base.apiKeys() }
    func revokeAPIKey(name: String) async throws -> Bool { try await base.revokeAPIKey(name: name) }
    func credentials() async throws -> [StoredCredential] { try await base.credentials() }
    func saveCredential(_ credential: StoredCredential, replacing revision: Int?) async throws -> Bool {
        try await base.saveCredential(credential, replacing: revision)
    }
    func removeCredential(name: String) async throws -> [String]? { try await base.removeCredential(name: name) }
    func appSettings() async throws -> [AppSettings] { try await base.appSettings() }
    func setLimits(of app: String, maximumQueued: Int?, deviceSendsPerSecond: Double?) async throws {
        try await base.setLimits(of: app, maximumQueued: maximumQueued, deviceSendsPerSecond: deviceSendsPerSecond)
    }
    func queueDepth(of app: String) async throws -> Int { try await base.queueDepth(of: app) }
    func takeDeviceSends(app: String, devices: Int, rate: Double, now: Date) async throws -> Double? {
        try await base.takeDeviceSends(app: app, devices: devices, rate: rate, now: now)
    }
    func returnDeviceSends(app: String, devices: Int, rate: Double) async throws {
        try await base.returnDeviceSends(app: app, devices: devices, rate: rate)
    }
    func enqueue(
        _ notification: QueuedNotification, maximumQueueDepth: Int, maximumAppDepth: Int?
    ) async throws -> EnqueueResult {
        try await base.enqueue(notification, maximumQueueDepth: maximumQueueDepth, maximumAppDepth: maximumAppDepth)
    }
    func queueDepth() async throws -> Int { try await base.queueDepth() }
    func claim(
        owner: String, limit: Int, now: Date, leaseUntil: Date, apps: AppFilter
    ) async throws -> [ClaimedNotification] {
        try await base.claim(owner: owner, limit: limit, now: now, leaseUntil: leaseUntil, apps: apps)
    }
    func register(_ instance: GatewayInstance, now: Date, staleAfter: Duration) async throws -> InstanceRegistration {
        try await base.register(instance, now: now, staleAfter: staleAfter)
    }
    func unregister(_ instance: GatewayInstance) async throws { try await base.unregister(instance) }
    func complete(_ outcomes: [DeliveryOutcome], owner: String, now: Date) async throws -> Int {
        try await base.complete(outcomes, owner: owner, now: now)
    }
    func markStarted(notificationID: String, positions: [Int], owner: String, now: Date) async throws -> Int {
        try await base.markStarted(notificationID: notificationID, positions: positions, owner: owner, now: now)
    }
    func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int {
        try await base.deleteFinished(before: cutoff, limit: limit)
    }
    func progress(of id: String) async throws -> NotificationProgress? { try await base.progress(of: id) }
    func unregistered(apps: Set<String>, after cursor: Int64, limit: Int) async throws -> [UnregisteredToken] {
        try await base.unregistered(apps: apps, after: cursor, limit: limit)
    }
    func acknowledgeUnregistered(app: String, tokens: [String]) async throws -> Int {
        try await base.acknowledgeUnregistered(app: app, tokens: tokens)
    }
    func addWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool {
        try await base.addWebhookEndpoint(endpoint)
    }
    func webhookEndpoints() async throws -> [WebhookEndpointStatus] { try await base.webhookEndpoints() }
    func removeWebhookEndpoint(name: String) async throws -> Bool { try await base.removeWebhookEndpoint(name: name) }
    func webhookBacklog() async throws -> WebhookBacklog { try await base.webhookBacklog() }
    func cancel(notificationID id: String, message: String, now: Date) async throws -> Int {
        try await base.cancel(notificationID: id, message: message, now: now)
    }
    func makeWebhookMessages(batch: Int, now: Date) async throws -> Int {
        try await base.makeWebhookMessages(batch: batch, now: now)
    }
    func claimWebhookMessages(owner: String, limit: Int, now: Date, leaseUntil: Date) async throws -> [WebhookMessage] {
        try await base.claimWebhookMessages(owner: owner, limit: limit, now: now, leaseUntil: leaseUntil)
    }
    func finishWebhookTry(id: String, owner: String, result: WebhookTry, now: Date) async throws {
        try await base.finishWebhookTry(id: id, owner: owner, result: result, now: now)
    }
}
