import Foundation
import Logging
import PostgresNIO

// Webhooks (`GatewayStore`) as PostgreSQL keeps them: endpoints, the outbox of events, and their
// messages. Messages are made and claimed with `FOR UPDATE SKIP LOCKED`, so instances on one
// database never make or try the same one at once.
extension PostgresStore {
    package func addWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool {
        try await client.query(
            """
            INSERT INTO webhook_endpoints(name, app, url, sealed, created_at)
            VALUES (\(endpoint.name), \(endpoint.app), \(endpoint.url), \(endpoint.sealed),
                \(endpoint.createdAt.timeIntervalSince1970))
            ON CONFLICT (name) DO NOTHING RETURNING 1
            """, logger: logger
        ).collect().count == 1
    }

    package func webhookEndpoints() async throws -> [WebhookEndpointStatus] {
        var endpoints: [WebhookEndpointStatus] = []
        // The same statement as SQLite's: it has no parameters.
        for try await row in try await client.query(
            PostgresQuery(unsafeSQL: WebhookSQL.status), logger: logger
        ).decode((String, String, String, String, Double, Int, Int, Int, Int, String?).self) {
            endpoints.append(
                WebhookEndpointStatus(
                    endpoint: WebhookEndpoint(
                        name: row.0, app: row.1, url: row.2, sealed: row.3,
                        createdAt: Date(timeIntervalSince1970: row.4)),
                    waiting: row.5, pending: row.6, delivered: row.7, givenUp: row.8, lastError: row.9))
        }
        return endpoints
    }

    package func webhookBacklog() async throws -> WebhookBacklog {
        // The same statement as SQLite's: it has no parameters.
        for try await (events, messages) in try await client.query(
            PostgresQuery(unsafeSQL: WebhookSQL.backlog), logger: logger
        ).decode((Int, Int).self) {
            return WebhookBacklog(waitingEvents: events, pendingMessages: messages)
        }
        return WebhookBacklog(waitingEvents: 0, pendingMessages: 0)
    }

    package func removeWebhookEndpoint(name: String) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> Bool in
            try await connection.query("DELETE FROM webhook_events WHERE endpoint = \(name)", logger: logger)
            try await connection.query("DELETE FROM webhook_messages WHERE endpoint = \(name)", logger: logger)
            return try await connection.query(
                "DELETE FROM webhook_endpoints WHERE name = \(name) RETURNING 1", logger: logger
            ).collect().count == 1
        }
    }

    package func makeWebhookMessages(batch: Int, now: Date) async throws -> Int {
        let logger = self.logger
        let at = now.timeIntervalSince1970
        var made = 0
        var endpoints: [String] = []
        for try await endpoint in try await client.query(
            "SELECT DISTINCT endpoint FROM webhook_events", logger: logger
        ).decode(String.self) {
            endpoints.append(endpoint)
        }
        for endpoint in endpoints {
            while true {
                // One message a transaction: its events leave the outbox as it is written.
                let taken = try await client.withTransaction(logger: logger) { connection -> Int in
                    var taken: [(seq: Int, type: String, payload: String)] = []
                    for try await row in try await connection.query(
                        """
                        DELETE FROM webhook_events WHERE seq IN (
                            SELECT seq FROM webhook_events WHERE endpoint = \(endpoint) ORDER BY seq LIMIT \(batch)
                            FOR UPDATE SKIP LOCKED)
                        RETURNING seq, type, payload
                        """, logger: logger
                    ).decode((Int, String, String).self) {
                        taken.append(row)
                    }
                    let events = taken.sorted { $0.seq < $1.seq }.map { (type: $0.type, payload: $0.payload) }
                    guard !events.isEmpty else { return 0 }
                    let body = WebhookEvents.body(events, at: now)
                    try await connection.query(
                        """
                        INSERT INTO webhook_messages(id, endpoint, body, created_at, next_at)
                        VALUES (\(WebhookSQL.newMessageID()), \(endpoint), \(body), \(at), \(at))
                        """, logger: logger)
                    return events.count
                }
                if taken > 0 { made += 1 }
                if taken < batch { break }
            }
        }
        return made
    }

    package func claimWebhookMessages(
        owner: String, limit: Int, now: Date, leaseUntil: Date
    ) async throws -> [WebhookMessage] {
        let at = now.timeIntervalSince1970
        var messages: [WebhookMessage] = []
        for try await row in try await client.query(
            """
            WITH taken AS (
                UPDATE webhook_messages SET lease_owner = \(owner), lease_until = \(leaseUntil.timeIntervalSince1970)
                WHERE id IN (
                    SELECT id FROM webhook_messages
                    WHERE delivered_at IS NULL AND given_up_at IS NULL AND next_at <= \(at)
                        AND (lease_until IS NULL OR lease_until < \(at))
                    ORDER BY next_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING id, endpoint, body, created_at, attempts)
            SELECT t.id, t.body, t.created_at, t.attempts::int8, e.name, e.app, e.url, e.sealed, e.created_at
            FROM taken t JOIN webhook_endpoints e ON e.name = t.endpoint ORDER BY t.created_at
            """, logger: logger
        ).decode((String, String, Double, Int, String, String, String, String, Double).self) {
            messages.append(
                WebhookMessage(
                    id: row.0,
                    endpoint: WebhookEndpoint(
                        name: row.4, app: row.5, url: row.6, sealed: row.7,
                        createdAt: Date(timeIntervalSince1970: row.8)),
                    body: row.1, createdAt: Date(timeIntervalSince1970: row.2), attempts: row.3))
        }
        return messages
    }

    package func finishWebhookTry(id: String, owner: String, result: WebhookTry, now: Date) async throws {
        let at = now.timeIntervalSince1970
        switch result {
        case .delivered:
            try await client.query(
                """
                UPDATE webhook_messages SET delivered_at = \(at), last_error = NULL, lease_owner = NULL,
                    lease_until = NULL, attempts = attempts + 1
                WHERE id = \(id) AND lease_owner = \(owner)
                """, logger: logger)
        case .again(let next, let error):
            try await client.query(
                """
                UPDATE webhook_messages SET next_at = \(next.timeIntervalSince1970), last_error = \(error),
                    lease_owner = NULL, lease_until = NULL, attempts = attempts + 1
                WHERE id = \(id) AND lease_owner = \(owner)
                """, logger: logger)
        case .givenUp(let error):
            try await client.query(
                """
                UPDATE webhook_messages SET given_up_at = \(at), last_error = \(error), lease_owner = NULL,
                    lease_until = NULL, attempts = attempts + 1
                WHERE id = \(id) AND lease_owner = \(owner)
                """, logger: logger)
        }
    }
}
