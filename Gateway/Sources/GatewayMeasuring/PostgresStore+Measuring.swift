import APNsGateway
import Foundation
import PostgresNIO

/// What the tests and the benchmark read of a PostgreSQL queue and add to it, kept out of the
/// store the gateway runs.
extension PostgresStore {
    /// PostgreSQL's plans (`EXPLAIN`, one line per step) for the claim's list of apps and one of
    /// its rounds, the queue's depth, a batch of 500 outcomes and a batch of the retention's
    /// deletes, with the statistics the database has now: for the test that they read
    /// `deliveries_by_app` and the primary key, not the whole history.
    package func queryPlans() async throws -> (
        apps: [String], claim: [String], depth: [String], finish: [String], prune: [String]
    ) {
        let now = Date().timeIntervalSince1970
        let outcomes = (0..<500).map {
            DeliveryOutcome(
                notificationID: "plan", position: $0, token: String(repeating: "0", count: 64), app: "com.example.app",
                status: 200)
        }
        return try await (
            plan(of: Self.appsQuery()),
            plan(
                of: Self.claimQuery(
                    owner: "plan", apps: ["com.example.app", "com.example.other"], share: 1_000, limit: 2_000, now: now,
                    leaseUntil: now + 60)),
            plan(of: Self.depthQuery()),
            plan(
                of: Self.finishQuery(Columns(outcomes, owner: "plan"), now: now, events: EventColumns())),
            plan(of: Self.pruneQuery(before: now - 7 * 86_400, limit: 500))
        )
    }

    /// `EXPLAIN` of the statement the store runs, with the same binds and planner settings.
    func plan(of query: PostgresQuery) async throws -> [String] {
        let explain = PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: query.binds)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> [String] in
            try await Self.readByIndex(on: connection, logger: logger)
            var lines: [String] = []
            for try await line in try await connection.query(explain, logger: logger).decode(String.self) {
                lines.append(line)
            }
            return lines
        }
    }

    /// Adds `count` finished device-sends (notifications `history-…` of 1,000 each, finished a
    /// year ago), as a long-running queue holds: for the benchmark of the claim against history.
    /// Generated inside PostgreSQL, in one transaction.
    package func addFinishedHistory(count: Int) async throws {
        let notifications = (count + 999) / 1_000
        let yearAgo = Date().timeIntervalSince1970 - 365 * 86_400
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO notifications(id, key_name, push_type, app, request, created_at)
                SELECT 'history-' || i, 'history', 'alert', 'com.example.app', '{}', \(yearAgo)
                FROM generate_series(0, \(notifications - 1)) AS i
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO deliveries(notification_id, position, token, state, available_at, created_at, attempts, status, finished_at, app)
                SELECT 'history-' || (i / 1000), i % 1000, lpad(to_hex(i), 64, '0'), 'done', \(yearAgo), \(yearAgo), 1, 200, \(yearAgo),
                    'com.example.app'
                FROM generate_series(0, \(count - 1)) AS i
                """, logger: logger)
            try await connection.query("ANALYZE deliveries", logger: logger)
        }
    }
}
