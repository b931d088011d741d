import APNs
import Foundation
import Logging
import PostgresNIO

// The queue: accepting, claiming, recording started, finishing and pruning device-sends; what
// a client reads of a notification's progress and the unregistered tokens.

extension PostgresStore {
    package func enqueue(
        _ notification: QueuedNotification, maximumQueueDepth: Int, maximumAppDepth: Int?
    ) async throws -> EnqueueResult {
        if let idempotency = notification.idempotency,
            let first = try await firstUse(of: idempotency, keyName: notification.keyName)
        {
            return first
        }
        let counted = try await recentDepth()
        let devices = notification.tokens.count
        let now = clock.now
        // Checked and reserved in one step, so this instance's concurrent requests cannot pass the
        // limit together; given back if the insert fails.
        let refusedAt = self.depth.withLock { cached -> Int? in
            let depth = cached?.count ?? counted
            guard depth + devices <= maximumQueueDepth else { return depth }
            cached = (depth + devices, cached?.at ?? now)
            return nil
        }
        if let refusedAt { return .queueFull(depth: refusedAt) }
        let logger = self.logger
        let stored: Bool
        do {
            if let maximumAppDepth {
                switch try await insert(notification, withinQuota: maximumAppDepth, logger: logger) {
                case .stored(let wasStored):
                    stored = wasStored
                case .quotaFull(let appDepth):
                    self.depth.withLock { cached in cached?.count -= devices }
                    return .appQuotaFull(depth: appDepth, quota: maximumAppDepth)
                }
            } else {
                let rows = try await client.query(Self.insertQuery(notification), logger: logger).collect()
                stored = try rows.first?.decode(Int.self) == 1
            }
        } catch {
            self.depth.withLock { cached in cached?.count -= devices }
            throw error
        }
        if stored { return .accepted }
        // Another request with the same key was stored between the look-up and the insert.
        self.depth.withLock { cached in cached?.count -= devices }
        guard let idempotency = notification.idempotency,
            let first = try await firstUse(of: idempotency, keyName: notification.keyName)
        else { throw StoreError("a notification with the same idempotency key was stored and is gone; try again") }
        return first
    }

    /// The notification an earlier request stored under the same idempotency key, if any.
    private func firstUse(of idempotency: Idempotency, keyName: String) async throws -> EnqueueResult? {
        let rows = try await client.query(
            """
            SELECT id, request_hash FROM notifications
            WHERE key_name = \(keyName) AND idempotency_key = \(idempotency.key)
            """, logger: logger)
        for try await (id, fingerprint) in rows.decode((String, String).self) {
            return fingerprint == idempotency.fingerprint ? .replayed(id: id) : .keyReused(id: id)
        }
        return nil
    }

    private enum QuotaInsert {
        /// True when stored; false when another request's notification holds the idempotency key.
        case stored(Bool)
        /// Nothing stored: the app holds this many device-sends, and these would pass its quota.
        case quotaFull(Int)
    }

    /// Stores the notification unless its devices would take its app past `quota`, the check and
    /// the insert one step for every instance: a transaction that first takes the app's advisory
    /// lock, so the enqueues of one app with a quota wait for each other (and no one else does),
    /// and then reads the app's depth in a statement of its own, whose snapshot is taken after the
    /// lock and so sees what the enqueue before it stored. Read in the insert's own statement, or
    /// without the lock, the depth misses what other requests are storing at that moment, and
    /// requests made at once all pass. Five round trips (`BEGIN`, the lock, the depth, the insert,
    /// `COMMIT`) where an app without a quota takes one.
    private func insert(
        _ notification: QueuedNotification, withinQuota quota: Int, logger: Logger
    ) async throws -> QuotaInsert {
        try await client.withTransaction(logger: logger) { connection -> QuotaInsert in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(\(Self.appQuotaLockClass), hashtext(\(notification.app)))",
                logger: logger)
            let depthRows = try await connection.query(Self.appDepthQuery(notification.app), logger: logger).collect()
            let appDepth = try depthRows.first?.decode(Int.self) ?? 0
            guard appDepth + notification.tokens.count <= quota else { return .quotaFull(appDepth) }
            let rows = try await connection.query(Self.insertQuery(notification), logger: logger).collect()
            return .stored(try rows.first?.decode(Int.self) == 1)
        }
    }

    /// The first key of the two-key advisory locks that serialize each app's enqueues against its
    /// quota (the second is the hash of the app's name): a class of its own, apart from the
    /// one-key lock of instance registration.
    private static let appQuotaLockClass: Int32 = 7_309_355

    /// One statement, so one round trip and one implicit transaction: the notification and its
    /// device-sends are stored together or not at all (the foreign key is checked at the end of
    /// the statement, when the notification's row is in). As a transaction of two inserts it was
    /// four round trips (`BEGIN`, the inserts, `COMMIT`). Its one row counts 0 when nothing was
    /// stored because another request's notification holds the idempotency key: the unique index
    /// makes this insert wait for that request's transaction, and do nothing once it commits.
    private static func insertQuery(_ notification: QueuedNotification) -> PostgresQuery {
        let created = notification.createdAt.timeIntervalSince1970
        let available = notification.availableAt.timeIntervalSince1970
        let positions = Array(0..<notification.tokens.count)
        return
            """
            WITH notification AS (
                INSERT INTO notifications(id, key_name, push_type, app, request, created_at, idempotency_key, request_hash, trace_parent)
                VALUES (\(notification.id), \(notification.keyName), \(notification.pushType), \(notification.app), \(notification.storedJSON), \(created), \(notification.idempotency?.key), \(notification.idempotency?.fingerprint), \(notification.traceParent))
                ON CONFLICT (key_name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id),
            devices AS (
                INSERT INTO deliveries(notification_id, position, token, state, available_at, created_at, app)
                SELECT notification.id, p, t, 'queued', \(available), \(created), \(notification.app)
                FROM notification, unnest(\(positions)::integer[], \(notification.tokens)::text[]) AS u(p, t)),
            depth AS (
                UPDATE queue_depth SET value = value + \(positions.count)
                WHERE slot = \(Self.depthSlot()) AND EXISTS (SELECT 1 FROM notification)),
            app_counted AS (
                INSERT INTO app_depth(app, slot, value)
                SELECT \(notification.app), \(Self.depthSlot()), \(positions.count) FROM notification
                ON CONFLICT (app, slot) DO UPDATE SET value = app_depth.value + excluded.value)
            SELECT count(*) FROM notification
            """
    }

    package func queueDepth() async throws -> Int {
        // One round trip reading 16 rows.
        let count = try await client.query(Self.depthQuery(), logger: logger).collect().first?.decode(Int.self) ?? 0
        let now = clock.now
        depth.withLock { $0 = (count, now) }
        return count
    }

    /// The queue's depth: the device-sends not finished, the sum of `queue_depth`'s 16 rows.
    package static func depthQuery() -> PostgresQuery {
        "SELECT coalesce(sum(value), 0)::int8 FROM queue_depth"
    }

    /// The row of `queue_depth` a write adds to or subtracts from.
    static func depthSlot() -> Int { Int.random(in: 0..<16) }

    /// The apps with unfinished device-sends, found by skipping from one app to the next in
    /// `deliveries_by_app` (a few index look-ups per app, whatever the backlog).
    package static func appsQuery() -> PostgresQuery {
        """
        WITH RECURSIVE apps(app) AS (
            (SELECT app FROM deliveries WHERE finished_at IS NULL ORDER BY app LIMIT 1)
            UNION ALL
            SELECT (SELECT d.app FROM deliveries d WHERE d.finished_at IS NULL AND d.app > apps.app ORDER BY d.app LIMIT 1)
            FROM apps WHERE apps.app IS NOT NULL)
        SELECT app FROM apps WHERE app IS NOT NULL
        """
    }

    /// One round of a claim (``FairShares``): for each of `apps`, up to `share` of its due
    /// device-sends (queued and available, or claimed with a lapsed lease whose instance's lease
    /// lapsed too), the longest due first, locked past other instances' claims, and at most
    /// `limit` in all, taken by `owner` until `leaseUntil`. Each app's part is a range of
    /// `deliveries_by_app` (`app`, then `available_at <= now`) walked in its order: the rows it
    /// reads and passes over are only those claimed (by live instances: what they have in flight),
    /// never those waiting for a later time, however many.
    package static func claimQuery(
        owner: String, apps: [String], share: Int, limit: Int, now: Double, leaseUntil: Double
    ) -> PostgresQuery {
        """
        WITH due AS (
            SELECT due.notification_id, due.position FROM unnest(\(apps)::text[]) AS a(app) CROSS JOIN LATERAL (
                SELECT notification_id, position FROM deliveries d
                WHERE d.app = a.app AND finished_at IS NULL AND available_at <= \(now) AND (state = 'queued'
                    OR (state = 'claimed' AND lease_until < \(now) AND NOT EXISTS (
                        SELECT 1 FROM instances i WHERE i.name = d.lease_owner AND i.lease_until >= \(now))))
                ORDER BY available_at, notification_id, position
                LIMIT \(share)
                FOR UPDATE SKIP LOCKED) due
            LIMIT \(limit))
        UPDATE deliveries d SET state = 'claimed', lease_owner = \(owner), lease_until = \(leaseUntil)
        FROM due WHERE d.notification_id = due.notification_id AND d.position = due.position
        RETURNING d.notification_id, d.position, d.token, d.attempts, d.created_at, d.started_at IS NOT NULL, d.app
        """
    }

    /// For the rest of the transaction, the planner reads the queue by its indexes: the claim walks
    /// `deliveries_by_app` in its order and stops at its share; an outcome finds each row by its
    /// primary key.
    ///
    /// A queue's rows change faster than ANALYZE follows them, and from statistics taken a moment
    /// earlier (no row claimed yet, or none queued) PostgreSQL chose plans whose cost grows with the
    /// queue: a claim of 2,000 read and sorted every unfinished row (spilling to disk), and a batch
    /// of 500 outcomes read the whole table into a hash (seen with `auto_explain` in the gateway
    /// benchmark). Those plans are only cheaper for a table of a few pages; these settings are
    /// local to the transaction (`set_config(…, true)`), so no other statement is affected. A step
    /// left without an alternative (the sort of a batch's 410s) keeps its "disabled" cost of 10¹⁰,
    /// which would start JIT compilation, far dearer than the statement, so JIT is off too.
    package static func readByIndex(on connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.query(
            """
            SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
                set_config('enable_sort', 'off', true), set_config('enable_hashjoin', 'off', true),
                set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)
            """, logger: logger
        ).collect()
    }

    /// The depth counted at most 200 ms ago, plus what this instance queued since.
    private func recentDepth() async throws -> Int {
        if let cached = depth.withLock({ $0 }), clock.now - cached.at < .milliseconds(200) {
            return cached.count
        }
        return try await queueDepth()
    }

    package func claim(
        owner: String, limit: Int, now: Date, leaseUntil: Date, apps filter: AppFilter
    ) async throws -> [ClaimedNotification] {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> [ClaimedNotification] in
            try await Self.readByIndex(on: connection, logger: logger)
            let nowSeconds = now.timeIntervalSince1970
            var apps: [String] = []
            for try await app in try await connection.query(Self.appsQuery(), logger: logger).decode(String.self)
            where filter.admits(app) {
                apps.append(app)
            }
            var claimed:
                [(id: String, position: Int, token: String, attempts: Int, created: Double, started: Bool, app: String)] =
                    []
            // Apps take turns (FairShares), one statement per round; a row claimed in a round is
            // no longer due, so the next round reads on from where it stopped.
            var shares = FairShares(limit: limit, apps: apps)
            while let round = shares.nextRound {
                let rows = try await connection.query(
                    Self.claimQuery(
                        owner: owner, apps: round.apps, share: round.share, limit: shares.remaining, now: nowSeconds,
                        leaseUntil: leaseUntil.timeIntervalSince1970),
                    logger: logger)
                var taken: [String: Int] = [:]
                for try await row in rows.decode((String, Int, String, Int, Double, Bool, String).self) {
                    claimed.append((row.0, row.1, row.2, row.3, row.4, row.5, row.6))
                    taken[row.6, default: 0] += 1
                }
                shares.finishRound(share: round.share, taken: taken)
            }
            guard !claimed.isEmpty else { return [] }
            claimed.sort { ($0.created, $0.id, $0.position) < ($1.created, $1.id, $1.position) }
            let ids = Array(Set(claimed.map(\.id)))
            var requests: [String: (request: String, traceParent: String?, cancelled: Bool)] = [:]
            for try await (id, request, traceParent, cancelled) in try await connection.query(
                """
                SELECT id, request, trace_parent, cancelled_at IS NOT NULL FROM notifications
                WHERE id = ANY(\(ids)::text[])
                """, logger: logger
            ).decode((String, String, String?, Bool).self) {
                requests[id] = (request, traceParent, cancelled)
            }
            var notifications: [ClaimedNotification] = []
            for entry in claimed {
                let delivery = ClaimedDelivery(
                    position: entry.position, token: entry.token, attempts: entry.attempts,
                    mayHaveBeenSent: entry.started)
                if notifications.last?.id == entry.id {
                    notifications[notifications.count - 1].deliveries.append(delivery)
                } else {
                    notifications.append(
                        ClaimedNotification(
                            id: entry.id, app: entry.app, storedJSON: requests[entry.id]?.request ?? "{}",
                            deliveries: [delivery], createdAt: Date(timeIntervalSince1970: entry.created),
                            traceParent: requests[entry.id]?.traceParent,
                            cancelled: requests[entry.id]?.cancelled ?? false))
                }
            }
            return notifications
        }
    }

    package func markStarted(notificationID: String, positions: [Int], owner: String, now: Date) async throws -> Int {
        guard !positions.isEmpty else { return 0 }
        return try await client.query(
            """
            UPDATE deliveries SET started_at = \(now.timeIntervalSince1970)
            WHERE notification_id = \(notificationID) AND position = ANY(\(positions)::integer[])
                AND state = 'claimed' AND lease_owner = \(owner)
            RETURNING 1
            """, logger: logger
        ).collect().count
    }

    package func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int {
        let logger = self.logger
        let seconds = cutoff.timeIntervalSince1970
        return try await client.withTransaction(logger: logger) { connection -> Int in
            try await Self.readByIndex(on: connection, logger: logger)
            let deleted = try await connection.query(Self.pruneQuery(before: seconds, limit: limit), logger: logger)
                .collect().count
            try await connection.query(
                """
                DELETE FROM unregistered WHERE seq IN (
                    SELECT seq FROM unregistered WHERE reported_at < \(seconds) LIMIT \(limit))
                """, logger: logger)
            // Webhook messages delivered or given up on, kept as long as the outcomes they carry.
            try await connection.query(
                """
                DELETE FROM webhook_messages WHERE id IN (
                    SELECT id FROM webhook_messages WHERE delivered_at < \(seconds) OR given_up_at < \(seconds)
                    LIMIT \(limit))
                """, logger: logger)
            return deleted
        }
    }

    /// The oldest `limit` finished notifications created before `cutoff`, deleted with their
    /// device-sends. Under ``readByIndex(on:logger:)`` each is found through `notifications_created`
    /// and its rows through the primary key; from young statistics PostgreSQL read the whole
    /// table of device-sends twice per batch instead.
    package static func pruneQuery(before cutoff: Double, limit: Int) -> PostgresQuery {
        """
        WITH old AS (
            SELECT id FROM notifications n WHERE created_at < \(cutoff)
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id AND d.state <> 'done')
            ORDER BY created_at LIMIT \(limit)),
        gone AS (DELETE FROM deliveries d USING old WHERE d.notification_id = old.id)
        DELETE FROM notifications n USING old WHERE n.id = old.id RETURNING 1
        """
    }

    package func cancel(notificationID id: String, message: String, now: Date) async throws -> Int {
        let logger = self.logger
        let at = now.timeIntervalSince1970
        let kind = FailureKind.cancelled.rawValue
        let notSent = Delivery.notSent.rawValue
        return try await client.withTransaction(logger: logger) { connection -> Int in
            var cancelled: [(position: Int, token: String, app: String)] = []
            for try await row in try await connection.query(
                """
                WITH cancelled AS (
                    UPDATE deliveries SET state = 'done', error_kind = \(kind), delivery = \(notSent),
                        message = \(message), finished_at = \(at)
                    WHERE notification_id = \(id) AND state = 'queued' AND finished_at IS NULL
                    RETURNING position, token, app),
                depth AS (
                    UPDATE queue_depth SET value = value - (SELECT count(*) FROM cancelled)
                    WHERE slot = \(Self.depthSlot())),
                app_counted AS (
                    INSERT INTO app_depth(app, slot, value)
                    SELECT app, \(Self.depthSlot()), -count(*) FROM cancelled GROUP BY app
                    ON CONFLICT (app, slot) DO UPDATE SET value = app_depth.value + excluded.value)
                SELECT position::int8, token, app FROM cancelled
                """, logger: logger
            ).decode((Int, String, String).self) {
                cancelled.append(row)
            }
            try await connection.query(
                "UPDATE notifications SET cancelled_at = coalesce(cancelled_at, \(at)) WHERE id = \(id)", logger: logger
            )
            guard let app = cancelled.first?.app else { return 0 }
            let events = EventColumns(
                cancelled.map {
                    DeliveryOutcome(
                        notificationID: id, position: $0.position, token: $0.token, app: app, errorKind: kind,
                        delivery: notSent, message: message, countsAsAttempt: false)
                }, now: now)
            try await connection.query(
                """
                INSERT INTO webhook_events(endpoint, type, payload, created_at)
                SELECT e.name, v.type, v.payload, \(at)
                FROM unnest(\(events.types)::text[], \(events.payloads)::text[]) WITH ORDINALITY AS v(type, payload, n)
                CROSS JOIN webhook_endpoints e WHERE e.app = \(app) ORDER BY e.name, v.n
                """, logger: logger)
            return cancelled.count
        }
    }

    package func complete(_ outcomes: [DeliveryOutcome], owner: String, now: Date) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        let logger = self.logger
        let requeued = outcomes.filter { $0.retryAt != nil }
        let finishing = outcomes.filter { $0.retryAt == nil }
        return try await client.withTransaction(logger: logger) { connection -> Int in
            try await Self.readByIndex(on: connection, logger: logger)
            if !requeued.isEmpty {
                try await connection.query(Self.requeueQuery(Columns(requeued, owner: owner)), logger: logger)
            }
            guard !finishing.isEmpty else { return 0 }
            // The apps with webhook endpoints: their outcomes' events go into the outbox in the
            // statement that finishes them.
            var hooked: Set<String> = []
            for try await app in try await connection.query(
                "SELECT DISTINCT app FROM webhook_endpoints", logger: logger
            ).decode(String.self) {
                hooked.insert(app)
            }
            return try await connection.query(
                Self.finishQuery(
                    Columns(finishing, owner: owner), now: now.timeIntervalSince1970,
                    events: EventColumns(finishing.filter { hooked.contains($0.app) }, now: now)),
                logger: logger
            ).collect().first?.decode(Int.self) ?? 0
        }
    }

    /// A batch of outcomes as one array per column (see ``complete(_:owner:now:)``).
    package struct Columns {
        var ids: [String] = [], positions: [Int] = [], statuses: [Int] = [], reasons: [String] = []
        var apnsIDs: [String] = [], kinds: [String] = [], deliveries: [String] = [], messages: [String] = []
        var retryAts: [Double] = [], apps: [String] = [], tokens: [String] = [], invalidSince: [Double] = []
        /// 1 for a try that counts among the device-send's attempts, else 0.
        var counted: [Int] = []
        /// The owner and the state a row must still have, once per row (see ``requeueQuery(_:)``).
        var owners: [String] = [], held: [String] = []
        package init(_ outcomes: [DeliveryOutcome], owner: String) {
            for outcome in outcomes {
                ids.append(outcome.notificationID)
                positions.append(outcome.position)
                statuses.append(outcome.status ?? -1)
                reasons.append(outcome.reason ?? "")
                apnsIDs.append(outcome.apnsID ?? "")
                kinds.append(outcome.errorKind ?? "")
                deliveries.append(outcome.delivery ?? "")
                messages.append(outcome.message ?? "")
                retryAts.append(outcome.retryAt?.timeIntervalSince1970 ?? .nan)
                apps.append(outcome.app)
                tokens.append(outcome.token)
                invalidSince.append(outcome.invalidSince?.timeIntervalSince1970 ?? .nan)
                counted.append(outcome.countsAsAttempt ? 1 : 0)
                owners.append(owner)
                held.append("claimed")
            }
        }
    }

    /// The webhook events of a batch's final outcomes (``WebhookEvents``), one array per column:
    /// each event with the device-send it is of.
    package struct EventColumns {
        var ids: [String] = [], positions: [Int] = [], types: [String] = [], payloads: [String] = []
        /// None: a batch whose apps have no webhook endpoint.
        package init() {}
        package init(_ outcomes: [DeliveryOutcome], now: Date) {
            for outcome in outcomes {
                for event in WebhookEvents.of(outcome, now: now) {
                    ids.append(outcome.notificationID)
                    positions.append(outcome.position)
                    types.append(event.type)
                    payloads.append(event.payload)
                }
            }
        }
    }

    /// Outcomes to try again later: each row this owner still holds is queued again for its time.
    ///
    /// Each kind of write is one statement over the batch: one array per column, sent in
    /// PostgreSQL's binary format and read back as rows by `unnest` (it was one JSON document per
    /// batch, built key by key here and parsed again there). postgres-nio's arrays carry no
    /// NULL, so an absent value travels as a stand-in no present one can be, turned back by
    /// `NULLIF`: "" for text (no reason, id, kind, delivery or message is empty), -1 for a
    /// status, NaN for a time.
    ///
    /// The row must still be this owner's claim, but that is said as a join with the batch's own
    /// columns (`o.owner`, `o.held`), not as `d.lease_owner = $owner`: from statistics ANALYZE took
    /// when nothing was claimed, PostgreSQL estimated "claimed by this owner" at 2 rows and read the
    /// whole table once per statement, then matched each of the batch's rows against every claim.
    /// As a join condition it cannot shrink the
    /// estimate of the rows to read, and each row is found by its primary key
    /// (``readByIndex(on:logger:)`` keeps it to that).
    private static func requeueQuery(_ c: Columns) -> PostgresQuery {
        """
        UPDATE deliveries d SET state = 'queued', lease_owner = NULL, lease_until = NULL, started_at = NULL, attempts = d.attempts + o.counted,
            available_at = o.retry_at, error_kind = NULLIF(o.error_kind, ''), delivery = NULLIF(o.delivery, ''),
            message = NULLIF(o.message, '')
        FROM unnest(\(c.ids)::text[], \(c.positions)::int8[], \(c.kinds)::text[], \(c.deliveries)::text[],
            \(c.messages)::text[], \(c.retryAts)::float8[], \(c.counted)::int8[], \(c.owners)::text[], \(c.held)::text[])
            AS o(notification_id, position, error_kind, delivery, message, retry_at, counted, owner, held)
        WHERE d.notification_id = o.notification_id AND d.position = o.position
            AND d.state = o.held AND d.lease_owner = o.owner
        """
    }

    /// Final outcomes, in one statement: finish the batch, record its 410s among the rows this owner
    /// still held (a data-modifying CTE runs to completion whatever the outer query reads), add
    /// their webhook events (`events`: those of apps with endpoints) for each endpoint of the
    /// row's app, and count them — no row travels back. Written as ``requeueQuery(_:)`` is.
    package static func finishQuery(_ c: Columns, now: Double, events: EventColumns) -> PostgresQuery {
        """
        WITH finished AS (
            UPDATE deliveries d SET state = 'done', lease_owner = NULL, lease_until = NULL, attempts = d.attempts + o.counted,
                status = NULLIF(o.status, -1), reason = NULLIF(o.reason, ''), apns_id = NULLIF(o.apns_id, ''),
                error_kind = NULLIF(o.error_kind, ''), delivery = NULLIF(o.delivery, ''),
                message = NULLIF(o.message, ''), finished_at = \(now)
            FROM unnest(\(c.ids)::text[], \(c.positions)::int8[], \(c.statuses)::int8[], \(c.reasons)::text[],
                \(c.apnsIDs)::text[], \(c.kinds)::text[], \(c.deliveries)::text[], \(c.messages)::text[],
                \(c.apps)::text[], \(c.tokens)::text[], \(c.invalidSince)::float8[], \(c.counted)::int8[],
                \(c.owners)::text[], \(c.held)::text[])
                AS o(notification_id, position, status, reason, apns_id, error_kind, delivery, message, app, token,
                    invalid_since, counted, owner, held)
            WHERE d.notification_id = o.notification_id AND d.position = o.position
                AND d.state = o.held AND d.lease_owner = o.owner
            RETURNING o.status, o.app, o.token, o.invalid_since, d.app AS row_app, d.notification_id, d.position),
        depth AS (
            UPDATE queue_depth SET value = value - (SELECT count(*) FROM finished) WHERE slot = \(depthSlot())),
        app_counted AS (
            INSERT INTO app_depth(app, slot, value)
            SELECT row_app, \(depthSlot()), -count(*) FROM finished GROUP BY row_app
            ON CONFLICT (app, slot) DO UPDATE SET value = app_depth.value + excluded.value),
        reported AS (
            INSERT INTO unregistered(app, token, invalid_since, reported_at)
            SELECT DISTINCT ON (app, token) app, token, NULLIF(invalid_since, 'NaN'), \(now)
            FROM finished WHERE status = 410
            ORDER BY app, token, NULLIF(invalid_since, 'NaN') DESC NULLS LAST
            ON CONFLICT (app, token) DO UPDATE SET invalid_since = EXCLUDED.invalid_since,
                reported_at = EXCLUDED.reported_at, seq = nextval('unregistered_seq_seq')),
        hooked AS (
            INSERT INTO webhook_events(endpoint, type, payload, created_at)
            SELECT e.name, v.type, v.payload, \(now)
            FROM finished f
            JOIN unnest(\(events.ids)::text[], \(events.positions)::int8[], \(events.types)::text[],
                \(events.payloads)::text[]) AS v(notification_id, position, type, payload)
                ON v.notification_id = f.notification_id AND v.position = f.position
            JOIN webhook_endpoints e ON e.app = f.row_app)
        SELECT count(*) FROM finished
        """
    }

    package func progress(of id: String) async throws -> NotificationProgress? {
        var progress: NotificationProgress?
        for try await (id, keyName, pushType, app, created) in try await client.query(
            "SELECT id, key_name, push_type, app, created_at FROM notifications WHERE id = \(id)", logger: logger
        ).decode((String, String, String, String, Double).self) {
            progress = NotificationProgress(
                id: id, keyName: keyName, pushType: pushType, app: app, createdAt: Date(timeIntervalSince1970: created),
                deliveries: [])
        }
        guard var progress else { return nil }
        let rows = try await client.query(
            """
            SELECT token, state, attempts, status, reason, apns_id, error_kind, delivery, message, finished_at
            FROM deliveries WHERE notification_id = \(id) ORDER BY position
            """, logger: logger)
        for try await row in rows {
            let (token, state, attempts, status, reason, apnsID, errorKind, delivery, message, finished) =
                try row.decode(
                    (String, String, Int, Int?, String?, String?, String?, String?, String?, Double?).self)
            progress.deliveries.append(
                DeliveryRecord(
                    token: token, state: state, attempts: attempts, status: status, reason: reason, apnsID: apnsID,
                    errorKind: errorKind,
                    delivery: delivery, message: message, finishedAt: finished.map(Date.init(timeIntervalSince1970:))))
        }
        return progress
    }

    package func unregistered(apps: Set<String>, after cursor: Int64, limit: Int) async throws -> [UnregisteredToken] {
        guard !apps.isEmpty else { return [] }
        let settled = clock.now.timeIntervalSince1970 - settleTime
        var tokens: [UnregisteredToken] = []
        for try await (seq, app, token, invalidSince, reported) in try await client.query(
            """
            SELECT seq, app, token, invalid_since, reported_at FROM unregistered
            WHERE app = ANY(\(apps.sorted())::text[]) AND seq > \(cursor) AND reported_at <= \(settled)
            ORDER BY seq LIMIT \(limit)
            """, logger: logger
        ).decode((Int64, String, String, Double?, Double).self) {
            tokens.append(
                UnregisteredToken(
                    cursor: seq, app: app, token: token,
                    invalidSince: invalidSince.map(Date.init(timeIntervalSince1970:)),
                    reportedAt: Date(timeIntervalSince1970: reported)))
        }
        return tokens
    }

    package func acknowledgeUnregistered(app: String, tokens: [String]) async throws -> Int {
        try await client.query(
            "DELETE FROM unregistered WHERE app = \(app) AND token = ANY(\(tokens)::text[]) RETURNING 1", logger: logger
        ).collect().count
    }
}
