import APNs
import APNsGateway
import Foundation
import Logging
import Testing

/// Delivery semantics a notification chooses: after its sender dies, a device-send recorded as
/// started is sent again (`at-least-once`) or reported `failed`, `delivery: unknown`, and never
/// sent again (`at-most-once`); one never recorded as started is sent either way.
@Suite struct DeliverySemanticsTests {
    /// A sender claims 1,000 device-sends, records 300 as started, writes the outcome of 100 and
    /// dies. Once its lease has expired, another sender takes the 900 over.
    @Test(arguments: Backend.allCases, ["at-least-once", "at-most-once"])
    func aDeadSendersStartedDeviceSendsFollowTheNotificationsSemantics(
        _ backend: Backend, _ delivery: String
    )
        async throws
    {
        let setup = try await GatewayAPITests.Setup.start(backend)
        let store = setup.store
        let tokens = (0..<1_000).map { String(format: "%064x", $0 + 1) }
        let body = GatewayAPITests.alert(to: tokens).replacingOccurrences(
            of: #""push-type":"alert","#, with: #""push-type":"alert","delivery":"\#(delivery)","#)
        let request = try NotificationRequest(body: Array(body.utf8), maximumDevices: 5_000)
        let queued = QueuedNotification(
            id: "n1", keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: request.storedJSON,
            tokens: tokens, createdAt: Date())
        #expect(try await store.enqueue(queued, maximumQueueDepth: 10_000) == .accepted)

        let now = Date()
        let claimed = try await store.claim(
            owner: "dead", limit: 2_000, now: now, leaseUntil: now.addingTimeInterval(1))
        #expect(claimed.first?.deliveries.count == 1_000)
        #expect(claimed.first?.deliveries.allSatisfy { !$0.mayHaveBeenSent } == true)
        #expect(
            try await store.markStarted(notificationID: "n1", positions: Array(0..<300), owner: "dead", now: now) == 300
        )
        // Another owner cannot record what it does not hold.
        #expect(try await store.markStarted(notificationID: "n1", positions: [400], owner: "other", now: now) == 0)
        let written = (0..<100).map {
            DeliveryOutcome(notificationID: "n1", position: $0, token: tokens[$0], app: "com.example.app", status: 200)
        }
        #expect(try await store.complete(written, owner: "dead", now: now) == 100)

        // The lease has run out for the sender that takes over.
        var configuration = Dispatcher.Configuration()
        configuration.clock = ManualGatewayClock(at: now.addingTimeInterval(2))
        let takeover = Dispatcher(
            store: store, connector: AnyConnector(setup.connector), configuration: configuration,
            logger: Logger(label: "takeover"))
        #expect(try await takeover.dispatchOnce() == 900)

        let progress = try #require(try await store.progress(of: "n1"))
        #expect(progress.deliveries.allSatisfy { $0.state == "done" })
        let sent = Set(setup.server.requests.map { String($0.path.dropFirst("/3/device/".count)) })
        let interrupted = progress.deliveries.filter { $0.errorKind == "interrupted" }
        if delivery == "at-most-once" {
            // 100..<300 may have been sent by the dead sender: reported, not sent again.
            #expect(sent == Set(tokens[300...]))
            #expect(Set(interrupted.map(\.token)) == Set(tokens[100..<300]))
            #expect(interrupted.allSatisfy { $0.delivery == "unknown" && $0.status == nil })
            #expect(progress.deliveries.filter { $0.status == 200 }.count == 800)
        } else {
            #expect(sent == Set(tokens[100...]))
            #expect(interrupted.isEmpty)
            #expect(progress.deliveries.allSatisfy { $0.status == 200 })
        }
        try await setup.stop()
    }

    /// An at-most-once notification sent normally: every device-send once, in groups recorded
    /// before they start; and a device-send queued again as not sent loses its record, so it is
    /// sent on its next attempt, not reported as interrupted.
    @Test(arguments: Backend.allCases)
    func atMostOnceSendsEveryDeviceOnceAndARequeueClearsTheRecord(_ backend: Backend) async throws {
        let setup = try await GatewayAPITests.Setup.start(backend)
        let store = setup.store
        let tokens = (0..<1_050).map { String(format: "%064x", $0 + 1) }
        let body = GatewayAPITests.alert(to: tokens).replacingOccurrences(
            of: #""push-type":"alert","#, with: #""push-type":"alert","delivery":"at-most-once","#)
        let request = try NotificationRequest(body: Array(body.utf8), maximumDevices: 5_000)
        #expect(
            try await store.enqueue(
                QueuedNotification(
                    id: "n1", keyName: "app", pushType: "alert", app: "com.example.app",
                    storedJSON: request.storedJSON, tokens: tokens, createdAt: Date()),
                maximumQueueDepth: 10_000) == .accepted)
        // A requeue as not sent clears the record.
        let now = Date()
        _ = try await store.claim(owner: "first", limit: 1, now: now, leaseUntil: now.addingTimeInterval(60))
        #expect(try await store.markStarted(notificationID: "n1", positions: [0], owner: "first", now: now) == 1)
        let requeue = DeliveryOutcome(
            notificationID: "n1", position: 0, token: tokens[0], app: "com.example.app", errorKind: "stopped",
            delivery: "not-sent", message: "not started", retryAt: now)
        _ = try await store.complete([requeue], owner: "first", now: now)

        var configuration = Dispatcher.Configuration()
        configuration.clock = ManualGatewayClock(at: now.addingTimeInterval(1))
        let dispatcher = Dispatcher(
            store: store, connector: AnyConnector(setup.connector), configuration: configuration,
            logger: Logger(label: "at-most-once"))
        #expect(try await dispatcher.dispatchOnce() == 1_050)
        let progress = try #require(try await store.progress(of: "n1"))
        #expect(progress.deliveries.allSatisfy { $0.state == "done" && $0.status == 200 })
        var perToken: [String: Int] = [:]
        for request in setup.server.requests { perToken[request.path, default: 0] += 1 }
        #expect(perToken.count == 1_050)
        #expect(perToken.values.allSatisfy { $0 == 1 })
        // Every device-send was recorded as started before it was sent.
        let unrecorded = try await setup.queue.rows(
            "SELECT CAST(count(*) AS TEXT) FROM deliveries WHERE started_at IS NULL")
        #expect(unrecorded == ["0"])
        try await setup.stop()
    }
}
