import APNsGateway
import Foundation
import Testing

/// What ``GatewayStore/complete(_:owner:now:)`` writes is what `progress` and the unregistered
/// list read back, absent values included: PostgreSQL's write carries them as stand-ins ("", -1,
/// NaN) that must come back as NULL, never as the stand-in.
@Suite struct OutcomeRecordTests {
    @Test(arguments: Backend.allCases)
    func everyFieldOfAnOutcomeIsReadBackAsWritten(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let now = Date()
        let tokens = (1...5).map { String(format: "%064x", $0) }
        let queued = QueuedNotification(
            id: "n1", keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: "{}", tokens: tokens,
            createdAt: now)
        #expect(try await store.enqueue(queued, maximumQueueDepth: 100) == .accepted)
        let claimed = try await store.claim(owner: "t", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60))
        #expect(claimed.first?.deliveries.count == 5)
        let invalid = Date(timeIntervalSince1970: 1_700_000_000)
        func outcome(_ position: Int) -> DeliveryOutcome {
            DeliveryOutcome(notificationID: "n1", position: position, token: tokens[position], app: "com.example.app")
        }
        var accepted = outcome(0)
        accepted.status = 200
        accepted.apnsID = "11111111-2222-3333-4444-555555555555"
        var unregisteredSince = outcome(1)
        unregisteredSince.status = 410
        unregisteredSince.reason = "Unregistered"
        unregisteredSince.invalidSince = invalid
        var unregistered = outcome(2)
        unregistered.status = 410
        unregistered.reason = "Unregistered"
        var failed = outcome(3)
        failed.errorKind = "timeout"
        failed.delivery = "unknown"
        failed.message = "no answer within 10 s"
        var later = outcome(4)
        later.errorKind = "throttled"
        later.delivery = "notSent"
        later.message = "429 TooManyRequests"
        later.retryAt = now.addingTimeInterval(3_600)
        #expect(
            try await store.complete([accepted, unregisteredSince, unregistered, failed, later], owner: "t", now: now)
                == 4)

        let records = try #require(try await store.progress(of: "n1")).deliveries
        #expect(records.count == 5)
        func same(_ record: DeliveryRecord, _ expected: DeliveryRecord) {
            var record = record
            record.finishedAt = nil
            #expect(record == expected)
        }
        same(
            records[0],
            DeliveryRecord(
                token: tokens[0], state: "done", attempts: 1, status: 200,
                apnsID: "11111111-2222-3333-4444-555555555555"))
        same(
            records[1],
            DeliveryRecord(token: tokens[1], state: "done", attempts: 1, status: 410, reason: "Unregistered"))
        same(
            records[2],
            DeliveryRecord(token: tokens[2], state: "done", attempts: 1, status: 410, reason: "Unregistered"))
        same(
            records[3],
            DeliveryRecord(
                token: tokens[3], state: "done", attempts: 1, errorKind: "timeout", delivery: "unknown",
                message: "no answer within 10 s"))
        same(
            records[4],
            DeliveryRecord(
                token: tokens[4], state: "queued", attempts: 1, errorKind: "throttled", delivery: "notSent",
                message: "429 TooManyRequests"))
        #expect(records[0...3].allSatisfy { $0.finishedAt != nil })
        #expect(records[4].finishedAt == nil)

        // The 410s: one with the time APNs gave, one without (NULL, not a stand-in).
        let reported = try await store.unregistered(apps: ["com.example.app"], after: 0, limit: 10)
        #expect(reported.map(\.token).sorted() == [tokens[1], tokens[2]])
        #expect(reported.first { $0.token == tokens[1] }?.invalidSince == invalid)
        #expect(reported.first { $0.token == tokens[2] }?.invalidSince == nil)
        // The throttled one is queued again, for its retry time: not due now.
        #expect(try await store.claim(owner: "t", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60)).isEmpty)
        await queue.remove()
    }
}
