import APNs
import Foundation
import GRDB

// The queue: enqueue, claim, outcomes, progress, prune, unregistered tokens (`GatewayStore`), on SQLite.
extension SQLiteStore {
    package func enqueue(
        _ notification: QueuedNotification, maximumQueueDepth: Int, maximumAppDepth: Int?
    ) async throws -> EnqueueResult {
        try await pool.write { db in
            // One writer at a time: the key read here cannot be stored by another request before
            // this transaction ends.
            if let idempotency = notification.idempotency,
                let first = try Row.fetchOne(
                    db,
                    sql: "SELECT id, request_hash FROM notifications WHERE key_name = ? AND idempotency_key = ?",
                    arguments: [notification.keyName, idempotency.key])
            {
                let fingerprint: String = first["request_hash"]
                return fingerprint == idempotency.fingerprint ? .replayed(id: first["id"]) : .keyReused(id: first["id"])
            }
            let depth = try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = 'queue_depth'") ?? 0
            guard depth + notification.tokens.count <= maximumQueueDepth else { return .queueFull(depth: depth) }
            let appCounter = "app:" + notification.app
            if let maximumAppDepth {
                let appDepth =
                    try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = ?", arguments: [appCounter]) ?? 0
                guard appDepth + notification.tokens.count <= maximumAppDepth else {
                    return .appQuotaFull(depth: appDepth, quota: maximumAppDepth)
                }
            }
            let created = notification.createdAt.timeIntervalSince1970
            try db.execute(
                sql: """
                    INSERT INTO notifications(id, key_name, push_type, app, request, created_at, idempotency_key, request_hash,
                        trace_parent)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    notification.id, notification.keyName, notification.pushType, notification.app,
                    notification.storedJSON, created, notification.idempotency?.key,
                    notification.idempotency?.fingerprint, notification.traceParent,
                ])
            let insert = try db.cachedStatement(
                sql:
                    "INSERT INTO deliveries(notification_id, position, token, state, available_at, app) VALUES (?, ?, ?, 'queued', ?, ?)"
            )
            for (position, token) in notification.tokens.enumerated() {
                try insert.execute(arguments: [
                    notification.id, position, token, notification.availableAt.timeIntervalSince1970, notification.app,
                ])
            }
            try db.execute(
                sql: "UPDATE counters SET value = value + ? WHERE name = 'queue_depth'",
                arguments: [notification.tokens.count])
            try db.execute(
                sql: """
                    INSERT INTO counters(name, value) VALUES (?, ?)
                    ON CONFLICT (name) DO UPDATE SET value = value + excluded.value
                    """, arguments: [appCounter, notification.tokens.count])
            return .accepted
        }
    }

    package func queueDepth() async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = 'queue_depth'") ?? 0
        }
    }

    /// The apps with queued or claimed device-sends, found by skipping from one app to the next in
    /// `deliveries_queued_by_app` and in `deliveries_claimed_by_app` (a few index look-ups per app,
    /// whatever the backlog). An app whose claims are all held by live senders is among them and
    /// finds nothing due.
    package static let appsQuery = """
        WITH RECURSIVE queued(app) AS (
            SELECT min(app) FROM deliveries WHERE state = 'queued'
            UNION ALL
            SELECT (SELECT min(app) FROM deliveries WHERE state = 'queued' AND app > queued.app)
            FROM queued WHERE queued.app IS NOT NULL),
        claimed(app) AS (
            SELECT min(app) FROM deliveries WHERE state = 'claimed'
            UNION ALL
            SELECT (SELECT min(app) FROM deliveries WHERE state = 'claimed' AND app > claimed.app)
            FROM claimed WHERE claimed.app IS NOT NULL)
        SELECT app FROM queued WHERE app IS NOT NULL
        UNION
        SELECT app FROM claimed WHERE app IS NOT NULL
        ORDER BY app
        """

    /// One app's device-sends due at `?2`, at most `?3`, the longest due first: those queued and
    /// available (a range of `deliveries_queued_by_app` read in order up to the limit) and those
    /// claimed under a lease that expired before `?2`, their sender dead (a range of
    /// `deliveries_claimed_by_app`, the longest expired first). Rows waiting for a later time,
    /// claims still held and finished rows (any number of them) are never read (`EXPLAIN QUERY
    /// PLAN` is checked by a test).
    package static let dueQuery = """
        SELECT id FROM (
            SELECT * FROM (
                SELECT rowid AS id, available_at FROM deliveries
                WHERE state = 'queued' AND app = ?1 AND available_at <= ?2 ORDER BY available_at LIMIT ?3)
            UNION ALL
            SELECT * FROM (
                SELECT rowid AS id, available_at FROM deliveries
                WHERE state = 'claimed' AND app = ?1 AND lease_until < ?2 ORDER BY lease_until LIMIT ?3))
        ORDER BY available_at LIMIT ?3
        """

    package func claim(
        owner: String, limit: Int, now: Date, leaseUntil: Date, apps filter: AppFilter
    ) async throws -> [ClaimedNotification] {
        try await pool.write { db in
            let nowSeconds = now.timeIntervalSince1970
            let update = try db.cachedStatement(
                sql: "UPDATE deliveries SET state = 'claimed', lease_owner = ?, lease_until = ? WHERE rowid = ?")
            var due: [Int64] = []
            // Apps take turns: each gets an equal share of what is left, and what some leave goes
            // to those that filled theirs. A claimed row is no longer queued, nor under an expired
            // lease, so each round reads on from where the last stopped.
            let apps = try String.fetchAll(db, sql: SQLiteStore.appsQuery).filter(filter.admits)
            let dueForApp = try db.cachedStatement(sql: SQLiteStore.dueQuery)
            var shares = FairShares(limit: limit, apps: apps)
            try shares.takeAll { app, share in
                let rows = try Int64.fetchAll(dueForApp, arguments: [app, nowSeconds, share])
                for rowid in rows { try update.execute(arguments: [owner, leaseUntil.timeIntervalSince1970, rowid]) }
                due += rows
                return rows.count
            }
            guard !due.isEmpty else { return [] }
            let read = try db.cachedStatement(
                sql: """
                    SELECT d.notification_id, d.position, d.token, d.attempts, d.started_at IS NOT NULL AS started, d.app,
                        n.request, n.created_at, n.trace_parent, n.cancelled_at IS NOT NULL AS cancelled
                    FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE d.rowid = ?
                    """)
            var rows:
                [(
                    created: Double, id: String, delivery: ClaimedDelivery, app: String, request: String,
                    traceParent: String?, cancelled: Bool
                )] = []
            rows.reserveCapacity(due.count)
            for rowid in due {
                guard let row = try Row.fetchOne(read, arguments: [rowid]) else { continue }
                rows.append(
                    (
                        row["created_at"], row["notification_id"],
                        ClaimedDelivery(
                            position: row["position"], token: row["token"], attempts: row["attempts"],
                            mayHaveBeenSent: row["started"]),
                        row["app"], row["request"], row["trace_parent"], row["cancelled"]
                    ))
            }
            // Oldest notification first, each one's devices in order.
            rows.sort { ($0.created, $0.id, $0.delivery.position) < ($1.created, $1.id, $1.delivery.position) }
            var claimed: [ClaimedNotification] = []
            for row in rows {
                if claimed.last?.id == row.id {
                    claimed[claimed.count - 1].deliveries.append(row.delivery)
                } else {
                    claimed.append(
                        ClaimedNotification(
                            id: row.id, app: row.app, storedJSON: row.request, deliveries: [row.delivery],
                            createdAt: Date(timeIntervalSince1970: row.created), traceParent: row.traceParent,
                            cancelled: row.cancelled))
                }
            }
            return claimed
        }
    }

    package func markStarted(notificationID: String, positions: [Int], owner: String, now: Date) async throws -> Int {
        guard !positions.isEmpty else { return 0 }
        return try await pool.write { db in
            let mark = try db.cachedStatement(
                sql: """
                    UPDATE deliveries SET started_at = ?
                    WHERE notification_id = ? AND position = ? AND state = 'claimed' AND lease_owner = ?
                    """)
            var marked = 0
            for position in positions {
                try mark.execute(arguments: [now.timeIntervalSince1970, notificationID, position, owner])
                marked += db.changesCount
            }
            return marked
        }
    }

    package func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int {
        try await pool.write { db in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT id FROM notifications n WHERE created_at < ?
                    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id AND d.state <> 'done')
                    ORDER BY created_at LIMIT ?
                    """, arguments: [cutoff.timeIntervalSince1970, limit])
            let deleteDeliveries = try db.cachedStatement(sql: "DELETE FROM deliveries WHERE notification_id = ?")
            let deleteNotification = try db.cachedStatement(sql: "DELETE FROM notifications WHERE id = ?")
            for id in ids {
                try deleteDeliveries.execute(arguments: [id])
                try deleteNotification.execute(arguments: [id])
            }
            try db.execute(
                sql:
                    "DELETE FROM unregistered WHERE rowid IN (SELECT rowid FROM unregistered WHERE reported_at < ? LIMIT ?)",
                arguments: [cutoff.timeIntervalSince1970, limit])
            // Webhook messages delivered or given up on, kept as long as the outcomes they carry.
            try db.execute(
                sql: """
                    DELETE FROM webhook_messages WHERE id IN (
                        SELECT id FROM webhook_messages WHERE delivered_at < ? OR given_up_at < ? LIMIT ?)
                    """, arguments: [cutoff.timeIntervalSince1970, cutoff.timeIntervalSince1970, limit])
            return ids.count
        }
    }

    package func cancel(notificationID id: String, message: String, now: Date) async throws -> Int {
        try await pool.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    UPDATE deliveries SET state = 'done', error_kind = ?, delivery = ?, message = ?, finished_at = ?
                    WHERE notification_id = ? AND state = 'queued'
                    RETURNING position, token, app
                    """,
                arguments: [
                    FailureKind.cancelled.rawValue, Delivery.notSent.rawValue, message, now.timeIntervalSince1970, id,
                ])
            try db.execute(
                sql: "UPDATE notifications SET cancelled_at = coalesce(cancelled_at, ?) WHERE id = ?",
                arguments: [now.timeIntervalSince1970, id])
            guard let app = rows.first?["app"] as String? else { return 0 }
            let webhooks = try Self.webhookEndpointsByApp(db)
            for row in rows {
                let outcome = DeliveryOutcome(
                    notificationID: id, position: row["position"], token: row["token"], app: app,
                    errorKind: FailureKind.cancelled.rawValue, delivery: Delivery.notSent.rawValue, message: message,
                    countsAsAttempt: false)
                try Self.addWebhookEvents(outcome, app: app, endpoints: webhooks, now: now, db: db)
            }
            try db.execute(
                sql: "UPDATE counters SET value = value - ? WHERE name IN ('queue_depth', ?)",
                arguments: [rows.count, "app:" + app])
            return rows.count
        }
    }

    package func complete(_ outcomes: [DeliveryOutcome], owner: String, now: Date) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        return try await pool.write { db in
            let finish = try db.cachedStatement(
                sql: """
                    UPDATE deliveries SET state = 'done', lease_owner = NULL, lease_until = NULL, attempts = attempts + ?,
                        status = ?, reason = ?, apns_id = ?, error_kind = ?, delivery = ?, message = ?, finished_at = ?
                    WHERE notification_id = ? AND position = ? AND state = 'claimed' AND lease_owner = ?
                    RETURNING app
                    """)
            let requeue = try db.cachedStatement(
                sql: """
                    UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_until = NULL, started_at = NULL, attempts = attempts + ?,
                        available_at = ?, error_kind = ?, delivery = ?, message = ?
                    WHERE notification_id = ? AND position = ? AND state = 'claimed' AND lease_owner = ?
                    """)
            let unregistered = try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO unregistered(app, token, invalid_since, reported_at) VALUES (?, ?, ?, ?)
                    """)
            let webhooks = try Self.webhookEndpointsByApp(db)
            var finished = 0
            var finishedByApp: [String: Int] = [:]
            for outcome in outcomes {
                if let retryAt = outcome.retryAt {
                    try requeue.execute(arguments: [
                        outcome.countsAsAttempt ? 1 : 0, retryAt.timeIntervalSince1970, outcome.errorKind,
                        outcome.delivery, outcome.message,
                        outcome.notificationID,
                        outcome.position, owner,
                    ])
                    continue
                }
                // The row's own app (the one its enqueue counted), when it was still this owner's.
                guard
                    let app = try String.fetchOne(
                        finish,
                        arguments: [
                            outcome.countsAsAttempt ? 1 : 0, outcome.status, outcome.reason, outcome.apnsID,
                            outcome.errorKind, outcome.delivery, outcome.message, now.timeIntervalSince1970,
                            outcome.notificationID, outcome.position, owner,
                        ])
                else { continue }
                finished += 1
                finishedByApp[app, default: 0] += 1
                try Self.addWebhookEvents(outcome, app: app, endpoints: webhooks, now: now, db: db)
                if outcome.status == 410 {
                    try unregistered.execute(arguments: [
                        outcome.app, outcome.token, outcome.invalidSince?.timeIntervalSince1970,
                        now.timeIntervalSince1970,
                    ])
                }
            }
            try db.execute(
                sql: "UPDATE counters SET value = value - ? WHERE name = 'queue_depth'", arguments: [finished])
            for (app, count) in finishedByApp {
                try db.execute(
                    sql: "UPDATE counters SET value = value - ? WHERE name = ?", arguments: [count, "app:" + app])
            }
            return finished
        }
    }

    package func progress(of id: String) async throws -> NotificationProgress? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM notifications WHERE id = ?", arguments: [id])
            else { return nil }
            let deliveries = try Row.fetchAll(
                db, sql: "SELECT * FROM deliveries WHERE notification_id = ? ORDER BY position", arguments: [id]
            ).map { row in
                DeliveryRecord(
                    token: row["token"], state: row["state"], attempts: row["attempts"], status: row["status"],
                    reason: row["reason"],
                    apnsID: row["apns_id"], errorKind: row["error_kind"], delivery: row["delivery"],
                    message: row["message"],
                    finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
            return NotificationProgress(
                id: row["id"], keyName: row["key_name"], pushType: row["push_type"], app: row["app"],
                createdAt: Date(timeIntervalSince1970: row["created_at"]), deliveries: deliveries)
        }
    }

    package func unregistered(apps: Set<String>, after cursor: Int64, limit: Int) async throws -> [UnregisteredToken] {
        guard !apps.isEmpty else { return [] }
        let appList = apps.sorted()
        return try await pool.read { db in
            let placeholders = Array(repeating: "?", count: appList.count).joined(separator: ",")
            var arguments = StatementArguments(appList)
            _ = arguments.append(contentsOf: [cursor, limit])
            return try Row.fetchAll(
                db,
                sql: "SELECT * FROM unregistered WHERE app IN (\(placeholders)) AND seq > ? ORDER BY seq LIMIT ?",
                arguments: arguments
            ).map { row in
                UnregisteredToken(
                    cursor: row["seq"], app: row["app"], token: row["token"],
                    invalidSince: (row["invalid_since"] as Double?).map(Date.init(timeIntervalSince1970:)),
                    reportedAt: Date(timeIntervalSince1970: row["reported_at"]))
            }
        }
    }

    package func acknowledgeUnregistered(app: String, tokens: [String]) async throws -> Int {
        try await pool.write { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM unregistered WHERE app = ? AND token = ?")
            var deleted = 0
            for token in tokens {
                try delete.execute(arguments: [app, token])
                deleted += db.changesCount
            }
            return deleted
        }
    }
}
