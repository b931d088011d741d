import APNsGateway
import GatewayMeasuring
import Foundation
import Testing

/// History that does not slow the queue: the claim reads only indexes of unfinished rows, and
/// finished notifications are deleted after their retention.
@Suite struct HistoryTests {
    /// SQLite's plans for the claim: the apps found by skipping through two partial indexes (the
    /// queued device-sends' and the claimed ones'), each app's due rows searched in the same two,
    /// up to now (no scan of the deliveries table, whatever it holds).
    @Test func theSQLiteClaimSearchesIndexesOnly() async throws {
        let queue = try await TestStore(.sqlite)
        let store = try #require(queue.store as? SQLiteStore)
        let plans = try await store.claimPlans()
        for plan in [plans.apps, plans.due] {
            #expect(!plan.contains { $0.hasPrefix("SCAN deliveries") }, "\(plan)")
        }
        for index in ["deliveries_queued_by_app", "deliveries_claimed_by_app"] {
            #expect(plans.apps.contains { $0 == "SEARCH deliveries USING INDEX \(index) (app>?)" }, "\(plans.apps)")
        }
        #expect(
            plans.due.contains {
                $0.hasPrefix("SEARCH deliveries USING INDEX deliveries_queued_by_app (app=? AND available_at<?)")
            }, "\(plans.due)")
        #expect(
            plans.due.contains {
                $0.hasPrefix("SEARCH deliveries USING INDEX deliveries_claimed_by_app (app=? AND lease_until<?)")
            }, "\(plans.due)")
        await queue.remove()
    }

    /// PostgreSQL's plans, with statistics of a long history (20,000 finished device-sends, a few
    /// queued and claimed): the claim reads the partial index of unfinished rows by app and due time
    /// (and finds the apps in it by skipping from one to the next), the
    /// depth no device-send at all, and a batch of outcomes or of the retention's deletes finds its
    /// rows by their primary key.
    @Test func thePostgreSQLQueueIsReadByItsIndexes() async throws {
        let queue = try await TestStore(.postgres)
        let store = try #require(queue.store as? PostgresStore)
        let now = Date()
        for index in 0..<3 {
            let queued = QueuedNotification(
                id: "n\(index)", keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: "{}",
                tokens: (0..<5).map { String(format: "%064x", 10 * index + $0) }, createdAt: now)
            #expect(try await store.enqueue(queued, maximumQueueDepth: 100) == .accepted)
        }
        #expect(
            try await store.claim(owner: "t", limit: 5, now: now, leaseUntil: now.addingTimeInterval(60)).count == 1)
        // Adds the history and brings the planner's statistics up to date (ANALYZE).
        try await store.addFinishedHistory(count: 20_000)
        let plans = try await store.queryPlans()
        #expect(plans.claim.contains { $0.contains("using deliveries_by_app on deliveries") }, "\(plans.claim)")
        #expect(plans.apps.contains { $0.contains("using deliveries_by_app on deliveries") }, "\(plans.apps)")
        #expect(!plans.apps.contains { $0.contains("Seq Scan on deliveries") }, "\(plans.apps)")
        #expect(!plans.claim.contains { $0.contains("Seq Scan on deliveries") }, "\(plans.claim)")
        // Up to now only: rows due later (a back-off, a pause) are not read.
        #expect(
            plans.claim.contains { $0.contains("Index Cond: ((app = a.app) AND (available_at <=") }, "\(plans.claim)")
        // The depth is kept, not counted: it reads 16 rows, never the device-sends.
        #expect(plans.depth.contains { $0.contains("on queue_depth") }, "\(plans.depth)")
        #expect(!plans.depth.contains { $0.contains("deliveries") }, "\(plans.depth)")
        // The claim walks the index in its order and stops at its limit: no reading and sorting of
        // every unfinished row first.
        #expect(!plans.claim.contains { $0.contains("Sort") || $0.contains("Bitmap") }, "\(plans.claim)")
        // Statistics from a moment with nothing claimed (as now) must not make a batch of outcomes
        // read every row: each is found by its primary key.
        #expect(
            plans.finish.contains { $0.contains("Index Scan using deliveries_pkey on deliveries") }, "\(plans.finish)")
        #expect(
            !plans.finish.contains { $0.contains("Seq Scan on deliveries") || $0.contains("Hash Join") },
            "\(plans.finish)")
        // The retention's batch finds its notifications' rows by key, not by reading the history.
        #expect(!plans.prune.contains { $0.contains("Seq Scan on deliveries") }, "\(plans.prune)")
        #expect(plans.prune.contains { $0.contains("using deliveries_pkey on deliveries") }, "\(plans.prune)")
        await queue.remove()
    }

    /// Finished notifications older than the cutoff go with their outcomes, in batches; unfinished
    /// ones and newer ones stay, and so do unregistered entries reported after the cutoff.
    @Test(arguments: Backend.allCases)
    func finishedNotificationsAreDeletedAfterTheirRetention(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let now = Date()
        let old = now.addingTimeInterval(-8 * 86_400)
        // Three old notifications finished, one old with a device-send still queued, one new finished.
        for (index, created) in [old, old, old, old, now].enumerated() {
            let queued = QueuedNotification(
                id: "n\(index)", keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: "{}",
                tokens: [String(format: "%064x", 2 * index + 1), String(format: "%064x", 2 * index + 2)],
                createdAt: created)
            #expect(try await store.enqueue(queued, maximumQueueDepth: 100) == .accepted)
        }
        let claimed = try await store.claim(
            owner: "t", limit: 100, now: now, leaseUntil: now.addingTimeInterval(60))
        var outcomes: [DeliveryOutcome] = []
        for notification in claimed {
            for delivery in notification.deliveries where !(notification.id == "n3" && delivery.position == 1) {
                outcomes.append(
                    DeliveryOutcome(
                        notificationID: notification.id, position: delivery.position, token: delivery.token,
                        app: "com.example.app", status: delivery.position == 0 && notification.id == "n0" ? 410 : 200))
            }
        }
        #expect(try await store.complete(outcomes, owner: "t", now: old) == 9)
        let cutoff = now.addingTimeInterval(-7 * 86_400)
        #expect(try await store.deleteFinished(before: cutoff, limit: 2) == 2)
        #expect(try await store.deleteFinished(before: cutoff, limit: 2) == 1)
        #expect(try await store.deleteFinished(before: cutoff, limit: 2) == 0)
        for id in ["n0", "n1", "n2"] { #expect(try await store.progress(of: id) == nil) }
        #expect(try await store.progress(of: "n3")?.deliveries.count == 2)
        #expect(try await store.progress(of: "n4")?.deliveries.count == 2)
        #expect(try await store.queueDepth() == 1)
        // The 410 was reported at `old`: past the retention, gone from the unregistered list.
        #expect(try await store.unregistered(apps: ["com.example.app"], after: 0, limit: 10).isEmpty)
        await queue.remove()
    }
}
