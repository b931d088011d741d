@testable import APNsGateway
import APNs
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// What an app asks of a notification beyond "send it now": a time to send it (`send-at`), a
/// cancel of what has not been sent, several different notifications in one request, and an
/// answer that waits for a one-device push's outcome.
@Suite(.timeLimit(.minutes(2))) struct ScheduleCancelBatchTests {
    typealias Setup = GatewayAPITests.Setup
    static let token = GatewayAPITests.token

    static func object(_ buffer: ByteBuffer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// A notification with `send-at` is stored at once and never claimed before its time: not by
    /// the dispatcher that runs when it is accepted, nor by another one started later on the same
    /// queue (a restart, or a second instance); at its time it is sent, and its `--max-age-seconds`
    /// counts from then.
    @Test(arguments: Backend.allCases)
    func aScheduledNotificationIsNotClaimedBeforeItsTime(_ backend: Backend) async throws {
        let clock = ManualGatewayClock()
        let setup = try await Setup.start(
            backend, limits: { $0.clock = clock },
            sending: {
                $0.clock = clock
                $0.maximumAge = .seconds(30)
            })
        let sendAt = clock.now.addingTimeInterval(3_600)
        let body =
            #"{"push-type":"alert","bundle-id":"com.example.app","alert":"Later","send-at":\#(Self.milliseconds(sendAt)),"devices":["\#(Self.token)"]}"#
        let id = try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(setup.key),
                body: ByteBuffer(string: body)
            ) { response in
                #expect(response.status == .accepted)
                let answer = try Self.object(response.body)
                #expect(answer["send-at"] as? Int64 == Self.milliseconds(sendAt))
                return try #require(answer["id"] as? String)
            }
        }
        #expect(try await setup.dispatcher.dispatchOnce() == 0)
        clock.advance(by: 3_599)
        #expect(try await setup.dispatcher.dispatchOnce() == 0)
        // Another dispatcher on the same queue: what a restarted or second instance reads.
        var configuration = Dispatcher.Configuration()
        configuration.clock = clock
        configuration.instance = "restarted"
        let restarted = Dispatcher(
            store: setup.store, connector: AnyConnector(setup.connector), configuration: configuration,
            logger: Logger(label: "restarted"))
        #expect(try await restarted.dispatchOnce() == 0)
        #expect(setup.server.requests.isEmpty, "nothing reached APNs before its time")
        #expect(try await setup.store.queueDepth() == 1, "it counts in the queue while it waits")
        // Due, and an hour after it was accepted: its maximum age of 30 s counts from its time.
        clock.advance(by: 2)
        #expect(try await restarted.dispatchOnce() == 1)
        #expect(setup.server.requests.map(\.path) == ["/3/device/\(Self.token)"])
        let progress = try #require(try await setup.store.progress(of: id))
        #expect(progress.deliveries.map { OutcomeResult($0) } == [.accepted])
        try await setup.stop()
    }

    /// A `send-at` that reads as seconds is a 400; one beyond 30 days ahead, or after the
    /// notification's own expiration, a 422 that says what to do. Nothing is queued.
    @Test func aScheduleThatCannotBeKeptIsRefused() async throws {
        let setup = try await Setup.start(.sqlite)
        let now = Date()
        let cases: [(String, HTTPResponse.Status, String)] = [
            (#""send-at":\#(Int(now.timeIntervalSince1970) + 60)"#, .badRequest, "seconds, most likely"),
            (
                #""send-at":\#(Self.milliseconds(now.addingTimeInterval(31 * 86_400)))"#, .unprocessableContent,
                "at most 30 days ahead"
            ),
            (
                #""send-at":\#(Self.milliseconds(now.addingTimeInterval(600))),"expiration":\#(Int(now.timeIntervalSince1970) + 60)"#,
                .unprocessableContent, "would expire before it is due"
            ),
        ]
        try await setup.client { client in
            for (fields, status, words) in cases {
                try await client.execute(
                    uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(setup.key),
                    body: ByteBuffer(
                        string:
                            #"{"push-type":"alert","bundle-id":"com.example.app","alert":"Hi",\#(fields),"devices":["\#(Self.token)"]}"#
                    )
                ) { response in
                    #expect(response.status == status, "\(fields)")
                    let problem = try Self.object(response.body)
                    #expect(problem["field"] as? String == "send-at")
                    #expect((problem["detail"] as? String)?.contains(words) == true, "\(problem)")
                }
            }
        }
        #expect(try await setup.store.queueDepth() == 0)
        try await setup.stop()
    }

    /// `DELETE /v1/notifications/{id}` finishes every device-send not yet claimed as cancelled
    /// (never sent), leaves one on the wire to finish with its own outcome, and answers the
    /// progress with how many it cancelled and how many had been sent; each cancelled device-send
    /// is a final outcome for the app's webhooks. Another key's notification is a 404, and a
    /// second cancel cancels nothing.
    @Test(arguments: Backend.allCases)
    func aCancelStopsWhatWasNotSentAndCountsWhatWas(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let vault = try CredentialVault(key: Array(repeating: 6, count: 32))
        #expect(try await setup.store.addWebhookEndpoint(.test(url: "http://127.0.0.1:9/", vault: vault)))
        let tokens = (0..<5).map { String(format: "%064x", 7_000 + $0) }
        let id = try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(setup.key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: tokens))
            ) { response in try #require(try Self.object(response.body)["id"] as? String) }
        }
        // Two sent and answered, one on the wire (claimed, no outcome yet), two still queued.
        let now = Date()
        #expect(try await setup.store.claimAndAccept(owner: "sender", limit: 2, now: now) == 2)
        let onTheWire = try await setup.store.claim(owner: "sender", limit: 1, now: now, leaseUntil: now + 60)
        #expect(onTheWire.flatMap(\.deliveries).count == 1)

        try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications/\(id)", method: .delete, headers: GatewayAPITests.bearer(setup.otherKey)
            ) { response in #expect(response.status == .notFound) }
            try await client.execute(
                uri: "/v1/notifications/\(id)", method: .delete, headers: GatewayAPITests.bearer(setup.key)
            ) { response in
                #expect(response.status == .ok)
                let answer = try Self.object(response.body)
                #expect(answer["cancelled-now"] as? Int == 2)
                #expect(answer["done"] as? Bool == false, "one is still on the wire")
                let counts = try #require(answer["counts"] as? [String: Int])
                #expect(
                    counts == ["accepted": 2, "cancelled": 2, "queued": 1, "rejected": 0, "failed": 0, "expired": 0])
                let cancelled = try #require(answer["deliveries"] as? [[String: Any]]).filter {
                    $0["state"] as? String == "cancelled"
                }
                #expect(cancelled.count == 2)
                let error = try #require(cancelled.first?["error"] as? [String: String])
                #expect(error["kind"] == "cancelled" && error["delivery"] == "not-sent")
            }
            try await client.execute(
                uri: "/v1/notifications/\(id)", method: .delete, headers: GatewayAPITests.bearer(setup.key)
            ) { response in
                let answer = try Self.object(response.body)
                #expect(answer["cancelled-now"] as? Int == 0)
            }
        }
        #expect(try await setup.store.queueDepth() == 1, "the one on the wire")
        #expect(try await setup.dispatcher.dispatchOnce() == 0, "nothing cancelled is claimed")
        // The one on the wire finishes with its own outcome.
        let last = try #require(onTheWire.first?.deliveries.first)
        #expect(
            try await setup.store.complete(
                [
                    DeliveryOutcome(
                        notificationID: id, position: last.position, token: last.token, app: "com.example.app",
                        status: 200)
                ],
                owner: "sender", now: Date()) == 1)
        #expect(try await setup.store.queueDepth() == 0)
        // Five final outcomes: two accepted, two cancelled, then the last one.
        #expect(try await setup.store.webhookBacklog().waitingEvents == 5)
        try await setup.stop()
    }

    /// Device-sends a sender claimed and then left (it died) are not queued when the cancel comes,
    /// so it cannot finish them; the sender that takes them over reads the cancel with its claim
    /// and finishes them as cancelled: nothing reaches APNs after the cancel.
    @Test(arguments: Backend.allCases)
    func aCancelReachesWhatADeadSenderHeld(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let tokens = (0..<2).map { String(format: "%064x", 8_000 + $0) }
        let id = try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(setup.key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: tokens))
            ) { response in try #require(try Self.object(response.body)["id"] as? String) }
        }
        let now = Date()
        #expect(try await setup.store.claim(owner: "dead", limit: 2, now: now, leaseUntil: now + 1).count == 1)
        try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications/\(id)", method: .delete, headers: GatewayAPITests.bearer(setup.key)
            ) { response in
                let answer = try Self.object(response.body)
                #expect(answer["cancelled-now"] as? Int == 0 && answer["done"] as? Bool == false)
            }
        }
        var configuration = Dispatcher.Configuration()
        configuration.clock = ManualGatewayClock(at: now + 120)
        configuration.instance = "next"
        let next = Dispatcher(
            store: setup.store, connector: AnyConnector(setup.connector), configuration: configuration,
            logger: Logger(label: "next"))
        #expect(try await next.dispatchOnce() == 2, "the lapsed claims taken over")
        #expect(setup.server.requests.isEmpty, "nothing sent after the cancel")
        let progress = try #require(try await setup.store.progress(of: id))
        #expect(progress.deliveries.map { OutcomeResult($0) } == [.cancelled, .cancelled])
        #expect(progress.deliveries.allSatisfy { $0.delivery == "not-sent" })
        try await setup.stop()
    }

    /// `POST /v1/notification-batches` with three different notifications and a fourth that breaks
    /// a rule: each of the three is queued, the fourth refused with its own problem; the same batch
    /// again with the same `Idempotency-Key` gets the same three ids and queues nothing more.
    @Test(arguments: Backend.allCases)
    func aBatchIsAcceptedItemByItem(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let other = String(repeating: "ab", count: 32)
        let batch = """
            {"notifications":[
            {"push-type":"alert","bundle-id":"com.example.app","alert":{"title":"Hi"},"badge":1,"devices":["\(Self.token)"]},
            {"push-type":"background","bundle-id":"com.example.app","data":{"sync":true},"devices":["\(Self.token)","\(other)"]},
            {"push-type":"alert","bundle-id":"com.other.app","alert":"Not this key's","devices":["\(Self.token)"]},
            {"push-type":"alert","bundle-id":"com.example.app","alert":"Later","send-at":\(Self.milliseconds(Date().addingTimeInterval(600))),"devices":["\(other)"]},
            {"push-type":"background","bundle-id":"com.example.app","priority":10,"devices":["\(Self.token)"]}
            ]}
            """
        let headers = {
            var headers = GatewayAPITests.bearer(setup.key)
            headers[GatewayAPI.idempotencyKeyField] = "batch-1"
            return headers
        }()
        @Sendable func post(_ client: any TestClientProtocol) async throws -> ByteBuffer {
            try await client.execute(
                uri: "/v1/notification-batches", method: .post, headers: headers,
                body: ByteBuffer(string: batch)
            ) { response in
                #expect(response.status == .ok)
                return response.body
            }
        }
        let (firstBody, againBody) = try await setup.client { client in
            (try await post(client), try await post(client))
        }
        let first = try #require(try Self.object(firstBody)["results"] as? [[String: Any]])
        let again = try #require(try Self.object(againBody)["results"] as? [[String: Any]])
        #expect(first.map { $0["status"] as? Int } == [202, 202, 403, 202, 400])
        #expect(first.map { $0["devices"] as? Int } == [1, 2, nil, 1, nil])
        let problem = try #require(first[4]["problem"] as? [String: Any])
        #expect(problem["field"] as? String == "priority" && problem["status"] as? Int == 400, "\(problem)")
        #expect((first[2]["problem"] as? [String: Any])?["detail"] as? String != nil)
        #expect(again.map { $0["status"] as? Int } == [202, 202, 403, 202, 400])
        #expect(again.map { $0["id"] as? String } == first.map { $0["id"] as? String }, "the same notifications")
        #expect(again.compactMap { $0["replayed"] as? Bool } == [true, true, true])
        #expect(try await setup.store.queueDepth() == 4)
        #expect(try await setup.dispatcher.dispatchOnce() == 3, "the scheduled one waits")
        try await setup.stop()
    }

    /// `?wait=N` on a one-device `POST` answers 200 with the outcome once it is in (sent by the
    /// dispatcher meanwhile), or the usual 202 when the wait ends first; with more than one
    /// device it is a 422. The API waits on a test clock: the test sends while it waits, then moves
    /// its time on.
    @Test func aOneDevicePostWaitsForItsOutcome() async throws {
        let clock = ManualGatewayClock()
        let setup = try await Setup.start(.sqlite, limits: { $0.clock = clock })
        @Sendable func post(wait: Int) -> Task<(HTTPResponse.Status, ByteBuffer), any Error> {
            Task {
                try await setup.client { client in
                    try await client.execute(
                        uri: "/v1/notifications?wait=\(wait)", method: .post,
                        headers: GatewayAPITests.bearer(setup.key),
                        body: ByteBuffer(string: GatewayAPITests.alert(to: [Self.token]))
                    ) { response in (response.status, response.body) }
                }
            }
        }
        // Queued, and its POST waiting: the dispatcher sends it, and the wait's next look finds it.
        let sent = post(wait: 10)
        await clock.untilSleeping()
        #expect(try await setup.dispatcher.dispatchOnce() == 1)
        clock.advance(by: 1)
        let (status, body) = try await sent.value
        #expect(status == .ok)
        let answer = try Self.object(body)
        #expect(answer["done"] as? Bool == true)
        let delivery = try #require((answer["deliveries"] as? [[String: Any]])?.first)
        #expect(delivery["state"] as? String == "accepted" && delivery["status"] as? Int == 200)
        // Nothing sends now: the wait ends with the usual 202.
        let unsent = post(wait: 1)
        await clock.untilSleeping()
        clock.advance(by: 2)
        #expect(try await unsent.value.0 == .accepted)
        try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications?wait=1", method: .post, headers: GatewayAPITests.bearer(setup.key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: [Self.token, String(repeating: "ab", count: 32)]))
            ) { response in
                #expect(response.status == .unprocessableContent)
                let problem = try Self.object(response.body)
                #expect(problem["field"] as? String == "wait")
            }
            try await client.execute(
                uri: "/v1/notifications?wait=31", method: .post, headers: GatewayAPITests.bearer(setup.key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: [Self.token]))
            ) { response in
                #expect(response.status == .badRequest)
            }
        }
        try await setup.stop()
    }
}
