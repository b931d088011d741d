import APNs
import Foundation
import Logging
import PostgresNIO

// Running senders: registration, heartbeats and leaving.

extension PostgresStore {
    package func register(
        _ instance: GatewayInstance, now: Date, staleAfter: Duration
    ) async throws
        -> InstanceRegistration
    {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> InstanceRegistration in
            // Starting instances register one at a time.
            try await connection.query("SELECT pg_advisory_xact_lock(7309354182)", logger: logger)
            var dead: [String] = []
            var deadWebhookOwners: [String] = []
            for try await (name, host, pid, incarnation, heartbeat) in try await connection.query(
                "SELECT name, host, pid, incarnation, heartbeat_at FROM instances", logger: logger
            ).decode((String, String, Int32, String, Double).self) {
                let last = Date(timeIntervalSince1970: heartbeat)
                let isDead =
                    GatewayInstance.isDead(
                        host: host, processID: pid, lastHeartbeat: last, now: now, staleAfter: staleAfter)
                    || (name == instance.name
                        && instance.isEarlierStart(
                            host: host, processID: pid, incarnation: incarnation, lastHeartbeat: last, now: now))
                if name == instance.name, !isDead {
                    return .nameInUse(host: host, processID: pid, lastHeartbeat: last)
                }
                if isDead {
                    dead.append(name)
                    deadWebhookOwners.append(GatewayInstance.webhookOwner(name: name, incarnation: incarnation))
                }
            }
            try await connection.query(
                """
                UPDATE webhook_messages SET lease_owner = NULL, lease_until = NULL
                WHERE lease_owner = ANY(\(deadWebhookOwners)::text[])
                """, logger: logger)
            let names = Array(Set(dead + [instance.name]))
            let released = try await connection.query(
                """
                UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_until = NULL
                WHERE finished_at IS NULL AND state = 'claimed' AND lease_owner = ANY(\(names)::text[]) RETURNING 1
                """, logger: logger
            ).collect().count
            try await connection.query("DELETE FROM instances WHERE name = ANY(\(names)::text[])", logger: logger)
            try await connection.query(
                """
                INSERT INTO instances(name, host, pid, incarnation, heartbeat_at, lease_until)
                VALUES (\(instance.name), \(instance.host), \(instance.processID), \(instance.incarnation), \(now.timeIntervalSince1970),
                    \(now.timeIntervalSince1970 + staleAfter.seconds))
                """, logger: logger)
            return .registered(releasedClaims: released)
        }
    }

    /// Renews the instance's lease, which extends the lease of every device-send it holds (see
    /// the claim): one row, whatever it holds.
    package func heartbeat(_ instance: GatewayInstance, now: Date, leaseUntil: Date) async throws -> Bool {
        try await client.query(
            """
            UPDATE instances SET heartbeat_at = \(now.timeIntervalSince1970), lease_until = \(leaseUntil.timeIntervalSince1970)
            WHERE name = \(instance.name) AND incarnation = \(instance.incarnation) RETURNING 1
            """, logger: logger
        ).collect().count == 1
    }

    package func unregister(_ instance: GatewayInstance) async throws {
        try await client.query(
            "DELETE FROM instances WHERE name = \(instance.name) AND incarnation = \(instance.incarnation)",
            logger: logger)
    }
}
