import APNsGateway
import Foundation
import Testing

/// The schema goes through numbered migrations: an empty database and one left by release 0.1.0
/// end with the same schema, the older one keeping its rows; a database a newer release has
/// migrated is refused with what to do.
@Suite struct MigrationTests {
    /// The schema as the database describes it: tables, columns and indexes, in a stable order.
    static func schema(of queue: TestStore) async throws -> [String] {
        switch queue.backend {
        case .sqlite:
            return try await queue.rows(
                "SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
            )
        case .postgres:
            let columns = try await queue.rows(
                """
                SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
                FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position
                """)
            let indexes = try await queue.rows(
                "SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname")
            return columns + indexes
        }
    }

    static func migrations(of queue: TestStore) async throws -> [String] {
        switch queue.backend {
        case .sqlite: return try await queue.rows("SELECT identifier FROM grdb_migrations ORDER BY identifier")
        case .postgres:
            return try await queue.rows("SELECT version::text FROM gateway_schema ORDER BY gateway_schema.version")
        }
    }

    @Test(arguments: Backend.allCases)
    func anEmptyDatabaseGetsEveryMigrationOnce(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let applied = try await Self.migrations(of: queue)
        #expect(
            applied
                == (backend == .sqlite
                    ? [
                        // As the table sorts them, as text; GRDB applies them in the list's order.
                        "1-release-0.1.0", "10-trace-context", "11-cancel", "2-leases-and-retention", "3-at-most-once",
                        "4-idempotency-keys", "5-apps-and-credentials", "6-expired-leases-by-app",
                        "7-shared-app-rates", "8-key-scopes", "9-webhooks",
                    ]
                    : ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]))
        let schema = try await Self.schema(of: queue)
        // A second start applies nothing and changes nothing.
        try await queue.store.prepare()
        #expect(try await Self.migrations(of: queue) == applied)
        #expect(try await Self.schema(of: queue) == schema)
        #expect(schema.contains { $0.contains("instances") })
        // One notification per API key and idempotency key; notifications without one are not in it.
        #expect(schema.contains { $0.contains("UNIQUE INDEX notifications_idempotency") && $0.contains("IS NOT NULL") })
        if backend == .postgres {
            // Room on each page for a claim's new row version, written in place (no index entry).
            #expect(
                try await queue.rows(
                    "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'deliveries'")
                    == ["fillfactor=50"])
            // Apps' rates are taken at every request and need not survive a crash: no WAL.
            #expect(
                try await queue.rows("SELECT relpersistence::text FROM pg_class WHERE relname = 'app_rates'") == ["u"])
            #expect(!schema.contains { $0.contains("deliveries_claims") || $0.contains("deliveries_due ") })
            #expect(!schema.contains { $0.contains("deliveries_open") })
        }
        await queue.remove()
    }

    /// A queue release 0.1.0 made, with a key and a queued notification in it, upgraded in place:
    /// the same schema as a new one, and its rows still there and sent.
    @Test(arguments: Backend.allCases)
    func aRelease010DatabaseIsUpgradedInPlace(_ backend: Backend) async throws {
        let fresh = try await TestStore(backend)
        let expected = try await Self.schema(of: fresh)
        await fresh.remove()

        let queue = try await TestStore(backend, prepared: false)
        try await queue.execute(Release010.schema(backend))
        let created = Date().addingTimeInterval(-60).timeIntervalSince1970
        let token = String(repeating: "ab", count: 32)
        try await queue.execute(
            [
                "INSERT INTO api_keys(hash, name, apps, requests_per_second) VALUES ('\(String(repeating: "0", count: 64))', 'ops', 'com.example.app', 100)",
                "INSERT INTO notifications(id, key_name, push_type, app, request, created_at) VALUES ('n1', 'ops', 'alert', 'com.example.app', '{}', \(created))",
                backend == .sqlite
                    ? "INSERT INTO deliveries(notification_id, position, token, state, available_at) VALUES ('n1', 0, '\(token)', 'queued', \(created))"
                    : "INSERT INTO deliveries(notification_id, position, token, state, available_at, created_at) VALUES ('n1', 0, '\(token)', 'queued', \(created), \(created))",
            ] + (backend == .sqlite ? ["UPDATE counters SET value = 1 WHERE name = 'queue_depth'"] : []))

        try await queue.store.prepare()
        #expect(try await Self.schema(of: queue) == expected)
        #expect(try await queue.store.apiKey(hash: String(repeating: "0", count: 64))?.name == "ops")
        #expect(try await queue.store.queueDepth() == 1)
        // The unfinished device-send has its notification's app, so that claims take turns.
        #expect(try await queue.rows("SELECT app FROM deliveries") == ["com.example.app"])
        let now = Date()
        let claimed = try await queue.store.claim(
            owner: "t", limit: 10, now: now, leaseUntil: now.addingTimeInterval(60))
        #expect(claimed.map(\.id) == ["n1"])
        #expect(claimed.first?.deliveries.map(\.token) == [token])
        await queue.remove()
    }

    @Test(arguments: Backend.allCases)
    func aDatabaseFromANewerReleaseIsRefused(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        try await queue.execute([
            backend == .sqlite
                ? "INSERT INTO grdb_migrations(identifier) VALUES ('99-from-the-future')"
                : "INSERT INTO gateway_schema(version, name, applied_at) VALUES (99, 'from the future', 0)"
        ])
        let error = await #expect(throws: StoreError.self) { try await queue.store.prepare() }
        let message = error?.description ?? ""
        #expect(message.contains("upgraded by a newer apns-gateway"), "\(message)")
        #expect(message.contains(backend == .sqlite ? "99-from-the-future" : "99"), "\(message)")
        #expect(message.contains("run that version or a newer one"), "\(message)")
        await queue.remove()
    }
}

/// The schema release 0.1.0 (commit 4716200) created, statement for statement: the starting
/// point an upgrade is tested from. Never edited — it is what users' databases hold.
enum Release010 {
    static func schema(_ backend: Backend) -> [String] {
        switch backend {
        case .sqlite:
            return [
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
            ]
        case .postgres:
            return [
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
        }
    }
}
