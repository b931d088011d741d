import Foundation
import GRDB

// Webhooks (`GatewayStore`), on SQLite: endpoints, the outbox of events, and their messages.
extension SQLiteStore {
    package func addWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO webhook_endpoints(name, app, url, sealed, created_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (name) DO NOTHING
                    """,
                arguments: [
                    endpoint.name, endpoint.app, endpoint.url, endpoint.sealed,
                    endpoint.createdAt.timeIntervalSince1970,
                ])
            return db.changesCount == 1
        }
    }

    package func webhookEndpoints() async throws -> [WebhookEndpointStatus] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: WebhookSQL.status).map(WebhookSQL.status(of:))
        }
    }

    package func removeWebhookEndpoint(name: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM webhook_events WHERE endpoint = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM webhook_messages WHERE endpoint = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM webhook_endpoints WHERE name = ?", arguments: [name])
            return db.changesCount == 1
        }
    }

    package func makeWebhookMessages(batch: Int, now: Date) async throws -> Int {
        try await pool.write { db in
            var made = 0
            for endpoint in try String.fetchAll(db, sql: "SELECT DISTINCT endpoint FROM webhook_events") {
                while true {
                    let rows = try Row.fetchAll(
                        db,
                        sql: "SELECT seq, type, payload FROM webhook_events WHERE endpoint = ? ORDER BY seq LIMIT ?",
                        arguments: [endpoint, batch])
                    guard let last = rows.last?["seq"] as Int64? else { break }
                    let body = WebhookEvents.body(rows.map { ($0["type"], $0["payload"]) }, at: now)
                    try db.execute(
                        sql:
                            "INSERT INTO webhook_messages(id, endpoint, body, created_at, next_at) VALUES (?, ?, ?, ?, ?)",
                        arguments: [
                            WebhookSQL.newMessageID(), endpoint, body, now.timeIntervalSince1970,
                            now.timeIntervalSince1970,
                        ])
                    try db.execute(
                        sql: "DELETE FROM webhook_events WHERE endpoint = ? AND seq <= ?", arguments: [endpoint, last])
                    made += 1
                    if rows.count < batch { break }
                }
            }
            return made
        }
    }

    package func claimWebhookMessages(
        owner: String, limit: Int, now: Date, leaseUntil: Date
    ) async throws -> [WebhookMessage] {
        try await pool.write { db in
            let rows = try Row.fetchAll(
                db, sql: WebhookSQL.due,
                arguments: [now.timeIntervalSince1970, now.timeIntervalSince1970, limit])
            for row in rows {
                try db.execute(
                    sql: "UPDATE webhook_messages SET lease_owner = ?, lease_until = ? WHERE id = ?",
                    arguments: [owner, leaseUntil.timeIntervalSince1970, row["id"] as String])
            }
            return rows.map(WebhookSQL.message(of:))
        }
    }

    package func finishWebhookTry(id: String, owner: String, result: WebhookTry, now: Date) async throws {
        try await pool.write { db in
            let (sql, arguments) = WebhookSQL.finish(result, now: now.timeIntervalSince1970)
            try db.execute(
                sql: sql + " WHERE id = ? AND lease_owner = ?", arguments: StatementArguments(arguments + [id, owner]))
        }
    }

    package func webhookBacklog() async throws -> WebhookBacklog {
        try await pool.read { db in
            let row = try Row.fetchOne(db, sql: WebhookSQL.backlog)
            return WebhookBacklog(waitingEvents: row?[0] ?? 0, pendingMessages: row?[1] ?? 0)
        }
    }

    /// Adds the events of the final outcome `outcome` of `app` for each of its endpoints
    /// (`endpoints`, by app, read in the same transaction), in the transaction that finishes it.
    static func addWebhookEvents(
        _ outcome: DeliveryOutcome, app: String, endpoints: [String: [String]], now: Date, db: Database
    ) throws {
        guard let names = endpoints[app] else { return }
        let insert = try db.cachedStatement(
            sql: "INSERT INTO webhook_events(endpoint, type, payload, created_at) VALUES (?, ?, ?, ?)")
        for event in WebhookEvents.of(outcome, now: now) {
            for name in names {
                try insert.execute(arguments: [name, event.type, event.payload, now.timeIntervalSince1970])
            }
        }
    }

    /// Every endpoint's name by its app, for ``addWebhookEvents(_:app:endpoints:now:db:)``.
    static func webhookEndpointsByApp(_ db: Database) throws -> [String: [String]] {
        var byApp: [String: [String]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, app FROM webhook_endpoints") {
            byApp[row["app"], default: []].append(row["name"])
        }
        return byApp
    }
}

/// The webhook statements and rows of SQLite; ``status``, ``backlog`` (no parameters) and ``newMessageID()``
/// PostgreSQL uses too.
enum WebhookSQL {
    /// Each endpoint and how its events and messages stand.
    static let status = """
        SELECT e.name, e.app, e.url, e.sealed, e.created_at,
            (SELECT count(*) FROM webhook_events w WHERE w.endpoint = e.name) AS waiting,
            (SELECT count(*) FROM webhook_messages m WHERE m.endpoint = e.name
                AND m.delivered_at IS NULL AND m.given_up_at IS NULL) AS pending,
            (SELECT count(*) FROM webhook_messages m WHERE m.endpoint = e.name AND m.delivered_at IS NOT NULL)
                AS delivered,
            (SELECT count(*) FROM webhook_messages m WHERE m.endpoint = e.name AND m.given_up_at IS NOT NULL)
                AS given_up,
            (SELECT m.last_error FROM webhook_messages m WHERE m.endpoint = e.name AND m.delivered_at IS NULL
                AND m.last_error IS NOT NULL ORDER BY m.created_at DESC LIMIT 1) AS last_error
        FROM webhook_endpoints e ORDER BY e.name
        """

    /// The outbox's backlog (no parameters): the pending messages counted on the due index.
    static let backlog = """
        SELECT (SELECT count(*) FROM webhook_events),
            (SELECT count(*) FROM webhook_messages WHERE delivered_at IS NULL AND given_up_at IS NULL)
        """

    /// Due messages not held under a live lease, with their endpoints: `now`, `now`, limit.
    static let due = """
        SELECT m.id, m.body, m.created_at, m.attempts, e.name, e.app, e.url, e.sealed,
            e.created_at AS endpoint_created_at
        FROM webhook_messages m JOIN webhook_endpoints e ON e.name = m.endpoint
        WHERE m.delivered_at IS NULL AND m.given_up_at IS NULL AND m.next_at <= ?
            AND (m.lease_until IS NULL OR m.lease_until < ?)
        ORDER BY m.next_at LIMIT ?
        """

    /// The `UPDATE … SET` of a try's end and its arguments (the caller adds its `WHERE`).
    static func finish(_ result: WebhookTry, now: Double) -> (String, [(any DatabaseValueConvertible)?]) {
        let release = "lease_owner = NULL, lease_until = NULL, attempts = attempts + 1"
        switch result {
        case .delivered:
            return ("UPDATE webhook_messages SET delivered_at = ?, last_error = NULL, \(release)", [now])
        case .again(let at, let error):
            return (
                "UPDATE webhook_messages SET next_at = ?, last_error = ?, \(release)",
                [at.timeIntervalSince1970, error]
            )
        case .givenUp(let error):
            return ("UPDATE webhook_messages SET given_up_at = ?, last_error = ?, \(release)", [now, error])
        }
    }

    static func newMessageID() -> String { "msg_" + UUID().uuidString.lowercased() }

    static func status(of row: Row) -> WebhookEndpointStatus {
        WebhookEndpointStatus(
            endpoint: WebhookEndpoint(
                name: row["name"], app: row["app"], url: row["url"], sealed: row["sealed"],
                createdAt: Date(timeIntervalSince1970: row["created_at"])),
            waiting: row["waiting"], pending: row["pending"], delivered: row["delivered"], givenUp: row["given_up"],
            lastError: row["last_error"])
    }

    static func message(of row: Row) -> WebhookMessage {
        WebhookMessage(
            id: row["id"],
            endpoint: WebhookEndpoint(
                name: row["name"], app: row["app"], url: row["url"], sealed: row["sealed"],
                createdAt: Date(timeIntervalSince1970: row["endpoint_created_at"])),
            body: row["body"], createdAt: Date(timeIntervalSince1970: row["created_at"]), attempts: row["attempts"])
    }
}
