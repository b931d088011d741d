import Foundation
import GRDB

/// The embedded queue: one SQLite file in WAL mode (GRDB's `DatabasePool`), for one gateway
/// instance. Writes are serialised by SQLite; a claim is one transaction, so two senders in the
/// same process never claim the same device-send.
///
/// Thread safety: `Sendable`; GRDB runs every access on its own dispatch queues, never on a Swift
/// concurrency thread.
public final class SQLiteStore: GatewayStore {
    package let pool: DatabasePool

    /// Opens (creating if needed) the database at `path`.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
    }

    /// Applies the schema's missing migrations, recorded by GRDB's `DatabaseMigrator`.
    public func prepare() async throws {
        try await Migrations.migrate(pool)
    }

    public func addAPIKey(_ key: APIKey) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO api_keys(hash, name, apps, requests_per_second) VALUES (?, ?, ?, ?)",
                arguments: [key.hash, key.name, key.apps.sorted().joined(separator: "\n"), key.requestsPerSecond])
        }
    }

    public func apiKey(hash: String) async throws -> APIKey? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM api_keys WHERE hash = ?", arguments: [hash]).map { row in
                let apps: String = row["apps"]
                return APIKey(
                    name: row["name"], hash: row["hash"], apps: Set(apps.split(separator: "\n").map(String.init)),
                    requestsPerSecond: row["requests_per_second"])
            }
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM api_keys ORDER BY name").map { row in
                let apps: String = row["apps"]
                return APIKey(
                    name: row["name"], hash: row["hash"], apps: Set(apps.split(separator: "\n").map(String.init)),
                    requestsPerSecond: row["requests_per_second"])
            }
        }
    }

    public func revokeAPIKey(name: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM api_keys WHERE name = ?", arguments: [name])
            return db.changesCount > 0
        }
    }

    public func credentials() async throws -> [StoredCredential] {
        try await pool.read { db in
            var apps: [String: Set<String>] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT app, credential FROM app_settings WHERE credential IS NOT NULL")
            {
                apps[row["credential"], default: []].insert(row["app"])
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM credentials ORDER BY name").map { row in
                try StoredCredential(
                    row: CredentialRow(
                        name: row["name"], kind: row["kind"], teamID: row["team_id"], keyID: row["key_id"],
                        environments: row["environments"], apnsHost: row["apns_host"], sealed: row["sealed"],
                        fingerprint: row["fingerprint"], revision: row["revision"], updatedAt: row["updated_at"]),
                    apps: apps[row["name"]] ?? [])
            }
        }
    }

    public func saveCredential(_ credential: StoredCredential, replacing revision: Int?) async throws -> Bool {
        let row = CredentialRow(credential)
        return try await pool.write { db in
            if let revision {
                try db.execute(
                    sql: """
                        UPDATE credentials SET kind = ?, team_id = ?, key_id = ?, environments = ?, apns_host = ?,
                            sealed = ?, fingerprint = ?, revision = ?, updated_at = ?
                        WHERE name = ? AND revision = ?
                        """,
                    arguments: [
                        row.kind, row.teamID, row.keyID, row.environments, row.apnsHost, row.sealed, row.fingerprint,
                        row.revision, row.updatedAt, row.name, revision,
                    ])
                guard db.changesCount == 1 else { return false }
            } else {
                guard
                    try Int.fetchOne(db, sql: "SELECT 1 FROM credentials WHERE name = ?", arguments: [row.name]) == nil
                else { return false }
                try db.execute(
                    sql: """
                        INSERT INTO credentials(name, kind, team_id, key_id, environments, apns_host, sealed, fingerprint,
                            revision, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        row.name, row.kind, row.teamID, row.keyID, row.environments, row.apnsHost, row.sealed,
                        row.fingerprint, row.revision, row.updatedAt,
                    ])
            }
            try db.execute(sql: "UPDATE app_settings SET credential = NULL WHERE credential = ?", arguments: [row.name])
            let bind = try db.cachedStatement(
                sql: """
                    INSERT INTO app_settings(app, credential) VALUES (?, ?)
                    ON CONFLICT (app) DO UPDATE SET credential = excluded.credential
                    """)
            for app in credential.apps.sorted() { try bind.execute(arguments: [app, row.name]) }
            return true
        }
    }

    public func removeCredential(name: String) async throws -> [String]? {
        try await pool.write { db in
            let apps = try String.fetchAll(
                db, sql: "SELECT app FROM app_settings WHERE credential = ? ORDER BY app", arguments: [name])
            try db.execute(sql: "UPDATE app_settings SET credential = NULL WHERE credential = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM credentials WHERE name = ?", arguments: [name])
            return db.changesCount > 0 ? apps : nil
        }
    }

    public func appSettings() async throws -> [AppSettings] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM app_settings ORDER BY app").map { row in
                AppSettings(
                    app: row["app"], credential: row["credential"], maximumQueued: row["max_queued"],
                    deviceSendsPerSecond: row["device_sends_per_second"])
            }
        }
    }

    public func setLimits(of app: String, maximumQueued: Int?, deviceSendsPerSecond: Double?) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO app_settings(app, max_queued, device_sends_per_second) VALUES (?, ?, ?)
                    ON CONFLICT (app) DO UPDATE SET max_queued = excluded.max_queued,
                        device_sends_per_second = excluded.device_sends_per_second
                    """, arguments: [app, maximumQueued, deviceSendsPerSecond])
        }
    }

    public func takeDeviceSends(app: String, devices: Int, rate: Double, now: Date) async throws -> Double? {
        try await pool.write { db in
            let now = now.timeIntervalSince1970
            let tokens =
                try Row.fetchOne(db, sql: "SELECT tokens, at FROM app_rates WHERE app = ?", arguments: [app]).map {
                    DeviceSendBudget.refilled(tokens: $0["tokens"], at: $0["at"], now: now, rate: rate)
                } ?? rate
            guard tokens > 0 else { return DeviceSendBudget.wait(tokens: tokens, rate: rate) }
            try db.execute(
                sql: """
                    INSERT INTO app_rates(app, tokens, at) VALUES (?, ?, ?)
                    ON CONFLICT (app) DO UPDATE SET tokens = excluded.tokens, at = max(at, excluded.at)
                    """, arguments: [app, tokens - Double(devices), now])
            return nil
        }
    }

    public func returnDeviceSends(app: String, devices: Int, rate: Double) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE app_rates SET tokens = min(?, tokens + ?) WHERE app = ?",
                arguments: [rate, Double(devices), app])
        }
    }

    public func queueDepth(of app: String) async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = ?", arguments: ["app:" + app]) ?? 0
        }
    }

    public func enqueue(
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
                    INSERT INTO notifications(id, key_name, push_type, app, request, created_at, idempotency_key, request_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    notification.id, notification.keyName, notification.pushType, notification.app,
                    notification.storedJSON, created, notification.idempotency?.key,
                    notification.idempotency?.fingerprint,
                ])
            let insert = try db.cachedStatement(
                sql:
                    "INSERT INTO deliveries(notification_id, position, token, state, available_at, app) VALUES (?, ?, ?, 'queued', ?, ?)"
            )
            for (position, token) in notification.tokens.enumerated() {
                try insert.execute(arguments: [notification.id, position, token, created, notification.app])
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

    public func queueDepth() async throws -> Int {
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

    public func claim(
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
                    SELECT d.notification_id, d.position, d.token, d.attempts, d.started_at IS NOT NULL AS started, n.request, n.created_at
                    FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE d.rowid = ?
                    """)
            var rows: [(created: Double, id: String, delivery: ClaimedDelivery, request: String)] = []
            rows.reserveCapacity(due.count)
            for rowid in due {
                guard let row = try Row.fetchOne(read, arguments: [rowid]) else { continue }
                rows.append(
                    (
                        row["created_at"], row["notification_id"],
                        ClaimedDelivery(
                            position: row["position"], token: row["token"], attempts: row["attempts"],
                            mayHaveBeenSent: row["started"]),
                        row["request"]
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
                            id: row.id, storedJSON: row.request, deliveries: [row.delivery],
                            createdAt: Date(timeIntervalSince1970: row.created)))
                }
            }
            return claimed
        }
    }

    public func markStarted(notificationID: String, positions: [Int], owner: String, now: Date) async throws -> Int {
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

    public func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int {
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
            return ids.count
        }
    }

    public func register(
        _ instance: GatewayInstance, now: Date, staleAfter: Duration
    ) async throws
        -> InstanceRegistration
    {
        try await pool.write { db in
            let rows = try Row.fetchAll(db, sql: "SELECT name, host, pid, incarnation, heartbeat_at FROM instances")
            var dead: [String] = []
            for row in rows {
                let name: String = row["name"]
                let host: String = row["host"]
                let pid: Int32 = row["pid"]
                let heartbeat = Date(timeIntervalSince1970: row["heartbeat_at"])
                let isDead =
                    GatewayInstance.isDead(
                        host: host, processID: pid, lastHeartbeat: heartbeat, now: now, staleAfter: staleAfter)
                    || (name == instance.name
                        && instance.isEarlierStart(
                            host: host, processID: pid, incarnation: row["incarnation"], lastHeartbeat: heartbeat,
                            now: now))
                if name == instance.name, !isDead {
                    return .nameInUse(host: host, processID: pid, lastHeartbeat: heartbeat)
                }
                if isDead { dead.append(name) }
            }
            var released = 0
            for name in Set(dead + [instance.name]) {
                try db.execute(
                    sql: """
                        UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_until = NULL
                        WHERE state = 'claimed' AND lease_owner = ?
                        """, arguments: [name])
                released += db.changesCount
                try db.execute(sql: "DELETE FROM instances WHERE name = ?", arguments: [name])
            }
            try db.execute(
                sql: "INSERT INTO instances(name, host, pid, incarnation, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [
                    instance.name, instance.host, instance.processID, instance.incarnation, now.timeIntervalSince1970,
                ])
            return .registered(releasedClaims: released)
        }
    }

    public func heartbeat(_ instance: GatewayInstance, now: Date, leaseUntil: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE instances SET heartbeat_at = ? WHERE name = ? AND incarnation = ?",
                arguments: [now.timeIntervalSince1970, instance.name, instance.incarnation])
            guard db.changesCount == 1 else { return false }
            try db.execute(
                sql: "UPDATE deliveries SET lease_until = ? WHERE state = 'claimed' AND lease_owner = ?",
                arguments: [leaseUntil.timeIntervalSince1970, instance.name])
            return true
        }
    }

    public func unregister(_ instance: GatewayInstance) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM instances WHERE name = ? AND incarnation = ?",
                arguments: [instance.name, instance.incarnation])
        }
    }

    public func complete(_ outcomes: [DeliveryOutcome], owner: String, now: Date) async throws -> Int {
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

    public func progress(of id: String) async throws -> NotificationProgress? {
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

    public func unregistered(apps: Set<String>, after cursor: Int64, limit: Int) async throws -> [UnregisteredToken] {
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

    public func acknowledgeUnregistered(app: String, tokens: [String]) async throws -> Int {
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
