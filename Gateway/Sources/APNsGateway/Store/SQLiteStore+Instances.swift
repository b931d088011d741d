import Foundation
import GRDB

// Gateway instances: registration, heartbeats, leaving (`GatewayStore`), on SQLite.
extension SQLiteStore {
    package func register(
        _ instance: GatewayInstance, now: Date, staleAfter: Duration
    ) async throws
        -> InstanceRegistration
    {
        try await pool.write { db in
            let rows = try Row.fetchAll(db, sql: "SELECT name, host, pid, incarnation, heartbeat_at FROM instances")
            var dead: [String] = []
            var deadWebhookOwners: [String] = []
            for row in rows {
                let name: String = row["name"]
                let incarnation: String = row["incarnation"]
                let host: String = row["host"]
                let pid: Int32 = row["pid"]
                let heartbeat = Date(timeIntervalSince1970: row["heartbeat_at"])
                let isDead =
                    GatewayInstance.isDead(
                        host: host, processID: pid, lastHeartbeat: heartbeat, now: now, staleAfter: staleAfter)
                    || (name == instance.name
                        && instance.isEarlierStart(
                            host: host, processID: pid, incarnation: incarnation, lastHeartbeat: heartbeat,
                            now: now))
                if name == instance.name, !isDead {
                    return .nameInUse(host: host, processID: pid, lastHeartbeat: heartbeat)
                }
                if isDead {
                    dead.append(name)
                    deadWebhookOwners.append(GatewayInstance.webhookOwner(name: name, incarnation: incarnation))
                }
            }
            for owner in deadWebhookOwners {
                try db.execute(
                    sql: "UPDATE webhook_messages SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?",
                    arguments: [owner])
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

    package func heartbeat(_ instance: GatewayInstance, now: Date, leaseUntil: Date) async throws -> Bool {
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

    package func unregister(_ instance: GatewayInstance) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM instances WHERE name = ? AND incarnation = ?",
                arguments: [instance.name, instance.incarnation])
        }
    }
}
