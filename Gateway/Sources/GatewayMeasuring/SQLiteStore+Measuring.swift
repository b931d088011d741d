import APNsGateway
import Foundation
import GRDB

/// What the tests and the benchmark read of a SQLite queue and add to it, kept out of the store
/// the gateway runs.
extension SQLiteStore {
    /// SQLite's plans for the claim's two queries (its apps, and one app's due device-sends, those
    /// under an expired lease included), one line per step.
    package func claimPlans() async throws -> (apps: [String], due: [String]) {
        try await pool.read { db in
            func plan(_ sql: String, _ arguments: StatementArguments) throws -> [String] {
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map {
                    $0["detail"] as String
                }
            }
            return (
                try plan(SQLiteStore.appsQuery, []),
                try plan(SQLiteStore.dueQuery, ["com.example.app", 0.0, 1])
            )
        }
    }

    /// Adds `count` finished device-sends (notifications `history-…` of 1,000 each, finished a
    /// year ago, so retention would delete them at its next pass), as a long-running queue holds:
    /// for the benchmark of the claim against history. Generated inside SQLite, in one transaction.
    package func addFinishedHistory(count: Int) async throws {
        try await pool.write { db in
            let notifications = (count + 999) / 1_000
            let yearAgo = Date().timeIntervalSince1970 - 365 * 86_400
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
                    INSERT INTO notifications(id, key_name, push_type, app, request, created_at)
                    SELECT 'history-' || i, 'history', 'alert', 'com.example.app', '{}', ? FROM n
                    """, arguments: [notifications, yearAgo])
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
                    INSERT INTO deliveries(notification_id, position, token, state, available_at, attempts, status, apns_id, finished_at, app)
                    SELECT 'history-' || (i / 1000), i % 1000, printf('%064x', i), 'done', ?, 1, 200, NULL, ?, 'com.example.app' FROM n
                    """, arguments: [count, yearAgo, yearAgo])
        }
    }
}
