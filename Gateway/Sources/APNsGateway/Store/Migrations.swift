import Foundation
import GRDB
import Logging
import PostgresNIO

/// The queue's schema, as numbered migrations: each backend's list is the one owner of its schema,
/// applied in order by ``GatewayStore/prepare()`` and recorded in the database (GRDB's
/// `grdb_migrations` table on SQLite, `gateway_schema` on PostgreSQL), so a gateway upgrades a queue
/// left by any earlier release and refuses one that a newer release has changed.
///
/// A migration is never edited once released: a change is a new one at the end. The first is the
/// schema of release 0.1.0, written with `IF NOT EXISTS` so that a queue created before migrations
/// were recorded is adopted as it is; the second brings it to leases, instance names and retention;
/// the third records when an at-most-once device-send may have started (`started_at`); the fourth
/// (PostgreSQL) moves the renewed lease from each claimed device-send to its instance's row; the
/// next keeps each notification's `Idempotency-Key` and body fingerprint, unique per API key; the
/// sixth (PostgreSQL) keeps the queue's depth in rows and indexes unfinished rows by due time; the
/// next gives each unfinished device-send its app, so that claims take turns between apps, and
/// adds the credentials and the app each is bound to; SQLite's sixth indexes claimed device-sends
/// by app and lease, so that those under an expired lease are taken in their app's turn; the next
/// keeps each app's device-sends a second in the queue, shared by its instances; the next keeps a
/// token key's stated scope with its credential; the next adds webhooks (``webhookTables``); the
/// next keeps the trace context (W3C `traceparent`) of the request that accepted a notification, so
/// that its sends are traced as that request's children; the last records a cancel on the
/// notification, so that a device-send claimed before it is not sent after it.
enum Migrations {
    /// SQLite: (identifier, SQL) in order.
    static let sqlite: [(identifier: String, sql: String)] = [
        (
            "1-release-0.1.0",
            """
            CREATE TABLE IF NOT EXISTS api_keys (
                hash TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, apps TEXT NOT NULL, requests_per_second REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS notifications (
                id TEXT PRIMARY KEY, key_name TEXT NOT NULL, push_type TEXT NOT NULL, app TEXT NOT NULL,
                request TEXT NOT NULL, created_at REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS deliveries (
                notification_id TEXT NOT NULL REFERENCES notifications(id), position INTEGER NOT NULL,
                token TEXT NOT NULL, state TEXT NOT NULL, available_at REAL NOT NULL,
                lease_owner TEXT, lease_until REAL, attempts INTEGER NOT NULL DEFAULT 0,
                status INTEGER, reason TEXT, apns_id TEXT, error_kind TEXT, delivery TEXT, message TEXT, finished_at REAL,
                PRIMARY KEY (notification_id, position));
            CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(state, available_at) WHERE state <> 'done';
            CREATE TABLE IF NOT EXISTS unregistered (
                seq INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, token TEXT NOT NULL, invalid_since REAL,
                reported_at REAL NOT NULL, UNIQUE (app, token));
            CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
            INSERT OR IGNORE INTO counters(name, value) VALUES ('queue_depth', 0);
            """
        ),
        (
            "2-leases-and-retention",
            """
            DROP INDEX IF EXISTS deliveries_due;
            CREATE INDEX IF NOT EXISTS deliveries_claims ON deliveries(lease_owner) WHERE state = 'claimed';
            CREATE INDEX IF NOT EXISTS deliveries_queued ON deliveries(available_at) WHERE state = 'queued';
            CREATE INDEX IF NOT EXISTS deliveries_expiring ON deliveries(lease_until) WHERE state = 'claimed';
            CREATE INDEX IF NOT EXISTS notifications_created ON notifications(created_at);
            CREATE TABLE IF NOT EXISTS instances (
                name TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, incarnation TEXT NOT NULL,
                heartbeat_at REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS unregistered_reported ON unregistered(reported_at);
            """
        ),
        (
            "3-at-most-once",
            """
            ALTER TABLE deliveries ADD COLUMN started_at REAL;
            """
        ),
        (
            "4-idempotency-keys",
            """
            ALTER TABLE notifications ADD COLUMN idempotency_key TEXT;
            ALTER TABLE notifications ADD COLUMN request_hash TEXT;
            CREATE UNIQUE INDEX notifications_idempotency ON notifications(key_name, idempotency_key)
                WHERE idempotency_key IS NOT NULL;
            """
        ),
        (
            "5-apps-and-credentials",
            """
            ALTER TABLE deliveries ADD COLUMN app TEXT NOT NULL DEFAULT '';
            UPDATE deliveries SET app = (SELECT app FROM notifications n WHERE n.id = deliveries.notification_id)
                WHERE state <> 'done';
            DROP INDEX IF EXISTS deliveries_queued;
            CREATE INDEX deliveries_queued_by_app ON deliveries(app, available_at) WHERE state = 'queued';
            INSERT OR REPLACE INTO counters(name, value)
                SELECT 'app:' || app, count(*) FROM deliveries WHERE state <> 'done' GROUP BY app;
            \(credentialTables.joined(separator: ";\n"));
            """
        ),
        (
            "6-expired-leases-by-app",
            """
            DROP INDEX IF EXISTS deliveries_expiring;
            CREATE INDEX deliveries_claimed_by_app ON deliveries(app, lease_until) WHERE state = 'claimed';
            """
        ),
        (
            "7-shared-app-rates",
            """
            CREATE TABLE app_rates (app TEXT PRIMARY KEY, tokens REAL NOT NULL, at REAL NOT NULL);
            """
        ),
        ("8-key-scopes", "ALTER TABLE credentials ADD COLUMN key_scope TEXT;"),
        ("9-webhooks", webhookTables.joined(separator: ";\n") + ";"),
        ("10-trace-context", "ALTER TABLE notifications ADD COLUMN trace_parent TEXT;"),
        ("11-cancel", "ALTER TABLE notifications ADD COLUMN cancelled_at REAL;"),
    ]

    /// Webhooks, the same on both backends but for the events' sequence: each endpoint (its
    /// secret sealed like a credential's), the events of final outcomes waiting for a message
    /// (written in the transaction that finishes the outcome), and the messages made of them, each
    /// tried until it is delivered or given up on, and kept with how it ended.
    static func webhookTables(sequence: String) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS webhook_endpoints (
                name TEXT PRIMARY KEY, app TEXT NOT NULL, url TEXT NOT NULL, sealed TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS webhook_endpoints_by_app ON webhook_endpoints(app)",
            """
            CREATE TABLE IF NOT EXISTS webhook_events (
                seq \(sequence), endpoint TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS webhook_events_by_endpoint ON webhook_events(endpoint, seq)",
            """
            CREATE TABLE IF NOT EXISTS webhook_messages (
                id TEXT PRIMARY KEY, endpoint TEXT NOT NULL, body TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0, next_at DOUBLE PRECISION NOT NULL, lease_owner TEXT,
                lease_until DOUBLE PRECISION, delivered_at DOUBLE PRECISION, given_up_at DOUBLE PRECISION,
                last_error TEXT)
            """,
            """
            CREATE INDEX IF NOT EXISTS webhook_messages_due ON webhook_messages(next_at)
            WHERE delivered_at IS NULL AND given_up_at IS NULL
            """,
            "CREATE INDEX IF NOT EXISTS webhook_messages_by_endpoint ON webhook_messages(endpoint)",
        ]
    }
    static let webhookTables = webhookTables(sequence: "INTEGER PRIMARY KEY AUTOINCREMENT")

    /// The credentials and each app's credential and limits, the same on both backends. A secret
    /// is stored only sealed (``CredentialVault``); `fingerprint` names it without revealing it;
    /// `revision` grows with every rotation, and running instances replace a connector made from
    /// an earlier one. An app without a row (or without a credential in it) is served by the
    /// gateway's credential flags, if it has them.
    static let credentialTables = [
        """
        CREATE TABLE IF NOT EXISTS credentials (
            name TEXT PRIMARY KEY, kind TEXT NOT NULL, team_id TEXT, key_id TEXT, environments TEXT NOT NULL,
            apns_host TEXT, sealed TEXT NOT NULL, fingerprint TEXT NOT NULL, revision INTEGER NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS app_settings (
            app TEXT PRIMARY KEY, credential TEXT REFERENCES credentials(name) ON DELETE SET NULL,
            max_queued INTEGER, device_sends_per_second DOUBLE PRECISION)
        """,
        "CREATE INDEX IF NOT EXISTS app_settings_by_credential ON app_settings(credential)",
    ]

    /// PostgreSQL: (version, name, statements) in order; a version's statements run in the
    /// transaction that records it.
    static let postgres: [(version: Int, name: String, statements: [String])] = [
        (
            1, "release 0.1.0",
            [
                """
                CREATE TABLE IF NOT EXISTS api_keys (
                    hash text PRIMARY KEY, name text NOT NULL UNIQUE, apps text NOT NULL, requests_per_second double precision NOT NULL)
                """,
                """
                CREATE TABLE IF NOT EXISTS notifications (
                    id text PRIMARY KEY, key_name text NOT NULL, push_type text NOT NULL, app text NOT NULL, request text NOT NULL,
                    created_at double precision NOT NULL)
                """,
                """
                CREATE TABLE IF NOT EXISTS deliveries (
                    notification_id text NOT NULL REFERENCES notifications(id), position integer NOT NULL, token text NOT NULL,
                    state text NOT NULL, available_at double precision NOT NULL, created_at double precision NOT NULL,
                    lease_owner text, lease_until double precision, attempts integer NOT NULL DEFAULT 0,
                    status integer, reason text, apns_id text, error_kind text, delivery text, message text,
                    finished_at double precision, PRIMARY KEY (notification_id, position))
                """,
                "CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (created_at, notification_id, position) WHERE state <> 'done'",
                """
                CREATE TABLE IF NOT EXISTS unregistered (
                    seq bigserial PRIMARY KEY, app text NOT NULL, token text NOT NULL, invalid_since double precision,
                    reported_at double precision NOT NULL, UNIQUE (app, token))
                """,
            ]
        ),
        (
            2, "leases and retention",
            [
                "CREATE INDEX IF NOT EXISTS deliveries_claims ON deliveries (lease_owner) WHERE state = 'claimed'",
                "CREATE INDEX IF NOT EXISTS notifications_created ON notifications (created_at)",
                """
                CREATE TABLE IF NOT EXISTS instances (
                    name text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL, incarnation text NOT NULL,
                    heartbeat_at double precision NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS unregistered_reported ON unregistered (reported_at)",
            ]
        ),
        (3, "at-most-once", ["ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS started_at double precision"]),
        (
            4, "instance leases",
            [
                // The heartbeat renews one row (the instance's lease), not every device-send it holds.
                "ALTER TABLE instances ADD COLUMN IF NOT EXISTS lease_until double precision",
                // No index reads the state or the lease columns, so a claim (and a retry) rewrites
                // its row in place (a heap-only update: no index entry) in the room left on each
                // page; a finish leaves the unfinished rows' index.
                "DROP INDEX IF EXISTS deliveries_claims",
                """
                CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (created_at, notification_id, position)
                WHERE finished_at IS NULL
                """,
                "DROP INDEX IF EXISTS deliveries_due",
                "ALTER TABLE deliveries SET (fillfactor = 50)",
            ]
        ),
        (
            5, "idempotency keys",
            [
                "ALTER TABLE notifications ADD COLUMN IF NOT EXISTS idempotency_key text",
                "ALTER TABLE notifications ADD COLUMN IF NOT EXISTS request_hash text",
                // Only keyed notifications are in it; building it reads the notifications, not
                // their device-sends.
                """
                CREATE UNIQUE INDEX IF NOT EXISTS notifications_idempotency ON notifications (key_name, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
            ]
        ),
        (
            6, "costs flat in the backlog",
            [
                // The depth, kept by every enqueue and finish in one of 16 rows chosen at random (so
                // that concurrent writers seldom wait for one another), read as their sum.
                "CREATE TABLE IF NOT EXISTS queue_depth (slot integer PRIMARY KEY, value bigint NOT NULL)",
                "INSERT INTO queue_depth (slot, value) SELECT s, 0 FROM generate_series(0, 15) AS s ON CONFLICT DO NOTHING",
                """
                UPDATE queue_depth
                SET value = CASE slot WHEN 0 THEN (SELECT count(*) FROM deliveries WHERE finished_at IS NULL) ELSE 0 END
                """,
                // Unfinished rows by when they are due: a claim reads the due ones and stops, never
                // the rows waiting out a back-off or a pause. A claim leaves `available_at` as it
                // is, so it still rewrites its row in place; a requeue moves the row in the index.
                """
                CREATE INDEX IF NOT EXISTS deliveries_by_due ON deliveries (available_at, notification_id, position)
                WHERE finished_at IS NULL
                """,
                "DROP INDEX IF EXISTS deliveries_open",
            ]
        ),
        (
            7, "apps and credentials",
            [
                // Each device-send's app, so that a claim takes turns between apps: the unfinished
                // rows' (a finished one is never claimed again).
                "ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS app text NOT NULL DEFAULT ''",
                """
                UPDATE deliveries d SET app = n.app FROM notifications n
                WHERE n.id = d.notification_id AND d.finished_at IS NULL
                """,
                // Unfinished rows by app, then by when they are due: a claim reads each app's due
                // rows up to its share and stops; the apps are found by skipping from one to the
                // next. A claim changes none of these columns, so it still rewrites in place.
                """
                CREATE INDEX IF NOT EXISTS deliveries_by_app ON deliveries (app, available_at, notification_id, position)
                WHERE finished_at IS NULL
                """,
                "DROP INDEX IF EXISTS deliveries_by_due",
                // Each app's unfinished device-sends, kept as `queue_depth` is (in one of 16 rows
                // per app, chosen at random by each write), for its quota.
                """
                CREATE TABLE IF NOT EXISTS app_depth (
                    app text NOT NULL, slot integer NOT NULL, value bigint NOT NULL, PRIMARY KEY (app, slot))
                """,
                """
                INSERT INTO app_depth (app, slot, value)
                SELECT app, 0, count(*) FROM deliveries WHERE finished_at IS NULL GROUP BY app ON CONFLICT DO NOTHING
                """,
            ] + credentialTables
        ),
        (
            8, "shared app rates",
            [
                // Each app's device-sends a second, one bucket per app for every instance
                // (``DeviceSendBudget``): unlogged, so a request's take is not flushed to disk.
                """
                CREATE UNLOGGED TABLE IF NOT EXISTS app_rates (
                    app text PRIMARY KEY, tokens double precision NOT NULL, at double precision NOT NULL)
                """
            ]
        ),
        // A token key's scope as the operator stated it (``KeyScope/argument``); null when not stated.
        (9, "key scopes", ["ALTER TABLE credentials ADD COLUMN IF NOT EXISTS key_scope text"]),
        (10, "webhooks", webhookTables(sequence: "bigserial PRIMARY KEY")),
        (11, "trace context", ["ALTER TABLE notifications ADD COLUMN trace_parent TEXT"]),
        (12, "cancel", ["ALTER TABLE notifications ADD COLUMN cancelled_at DOUBLE PRECISION"]),
    ]

    /// The error for a queue a newer gateway has migrated past what this one knows.
    static func superseded(_ unknown: [String], known: String) -> StoreError {
        StoreError(
            """
            the queue's schema was upgraded by a newer apns-gateway (migrations this version does not know: \
            \(unknown.joined(separator: ", ")); this version stops at \(known)): run that version or a newer one \
            on this database, or restore the backup taken before the upgrade
            """)
    }

    /// Applies SQLite's missing migrations, in order, with no other writer between them; throws
    /// ``superseded(_:known:)`` when the database has one this version does not know.
    static func migrate(_ pool: DatabasePool) async throws {
        let migrator = sqlite.reduce(into: DatabaseMigrator()) { migrator, migration in
            migrator.registerMigration(migration.identifier) { db in try db.execute(sql: migration.sql) }
        }
        let known = Set(sqlite.map(\.identifier))
        let applied = try await pool.read { db in try migrator.appliedIdentifiers(db) }
        let unknown = applied.subtracting(known).sorted()
        guard unknown.isEmpty else { throw superseded(unknown, known: sqlite.last?.identifier ?? "") }
        // GRDB's own asynchronous form, so no Swift concurrency thread waits for the write lock.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            migrator.asyncMigrate(pool) { result in continuation.resume(with: result.map { _ in () }) }
        }
    }

    /// Applies PostgreSQL's missing migrations in one transaction, under an advisory lock so that
    /// instances starting together migrate one at a time; throws ``superseded(_:known:)`` when the
    /// database has a version this one does not know.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        // The versions this one does not know, found inside the transaction and thrown outside it
        // (postgres-nio wraps an error thrown inside in its own).
        let unknown = try await client.withTransaction(logger: logger) { connection -> [Int] in
            try await connection.query("SELECT pg_advisory_xact_lock(7309354181)", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS gateway_schema (
                    version integer PRIMARY KEY, name text NOT NULL, applied_at double precision NOT NULL)
                """, logger: logger)
            var applied: Set<Int> = []
            for try await version in try await connection.query("SELECT version FROM gateway_schema", logger: logger)
                .decode(Int.self)
            {
                applied.insert(version)
            }
            let unknown = applied.subtracting(postgres.map(\.version)).sorted()
            guard unknown.isEmpty else { return unknown }
            for migration in postgres where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let now = Date().timeIntervalSince1970
                try await connection.query(
                    "INSERT INTO gateway_schema(version, name, applied_at) VALUES (\(migration.version), \(migration.name), \(now))",
                    logger: logger)
                logger.info(
                    "applied schema migration",
                    metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            }
            return []
        }
        guard unknown.isEmpty else {
            throw superseded(unknown.map { "\($0)" }, known: "\(postgres.last?.version ?? 0)")
        }
    }
}
