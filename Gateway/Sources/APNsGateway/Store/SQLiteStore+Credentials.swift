import Foundation
import GRDB

// API keys and credentials (`GatewayStore`), on SQLite.
extension SQLiteStore {
    package func addAPIKey(_ key: APIKey) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO api_keys(hash, name, apps, requests_per_second) VALUES (?, ?, ?, ?)",
                arguments: [key.hash, key.name, key.apps.sorted().joined(separator: "\n"), key.requestsPerSecond])
        }
    }

    package func apiKey(hash: String) async throws -> APIKey? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM api_keys WHERE hash = ?", arguments: [hash]).map { row in
                let apps: String = row["apps"]
                return APIKey(
                    name: row["name"], hash: row["hash"], apps: Set(apps.split(separator: "\n").map(String.init)),
                    requestsPerSecond: row["requests_per_second"])
            }
        }
    }

    package func apiKeys() async throws -> [APIKey] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM api_keys ORDER BY name").map { row in
                let apps: String = row["apps"]
                return APIKey(
                    name: row["name"], hash: row["hash"], apps: Set(apps.split(separator: "\n").map(String.init)),
                    requestsPerSecond: row["requests_per_second"])
            }
        }
    }

    package func revokeAPIKey(name: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM api_keys WHERE name = ?", arguments: [name])
            return db.changesCount > 0
        }
    }

    package func credentials() async throws -> [StoredCredential] {
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
                        keyScope: row["key_scope"], environments: row["environments"], apnsHost: row["apns_host"],
                        sealed: row["sealed"],
                        fingerprint: row["fingerprint"], revision: row["revision"], updatedAt: row["updated_at"]),
                    apps: apps[row["name"]] ?? [])
            }
        }
    }

    package func saveCredential(_ credential: StoredCredential, replacing revision: Int?) async throws -> Bool {
        let row = CredentialRow(credential)
        return try await pool.write { db in
            if let revision {
                try db.execute(
                    sql: """
                        UPDATE credentials SET kind = ?, team_id = ?, key_id = ?, key_scope = ?, environments = ?,
                            apns_host = ?, sealed = ?, fingerprint = ?, revision = ?, updated_at = ?
                        WHERE name = ? AND revision = ?
                        """,
                    arguments: [
                        row.kind, row.teamID, row.keyID, row.keyScope, row.environments, row.apnsHost, row.sealed,
                        row.fingerprint,
                        row.revision, row.updatedAt, row.name, revision,
                    ])
                guard db.changesCount == 1 else { return false }
            } else {
                guard
                    try Int.fetchOne(db, sql: "SELECT 1 FROM credentials WHERE name = ?", arguments: [row.name]) == nil
                else { return false }
                try db.execute(
                    sql: """
                        INSERT INTO credentials(name, kind, team_id, key_id, key_scope, environments, apns_host, sealed,
                            fingerprint, revision, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        row.name, row.kind, row.teamID, row.keyID, row.keyScope, row.environments, row.apnsHost,
                        row.sealed,
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

    package func removeCredential(name: String) async throws -> [String]? {
        try await pool.write { db in
            let apps = try String.fetchAll(
                db, sql: "SELECT app FROM app_settings WHERE credential = ? ORDER BY app", arguments: [name])
            try db.execute(sql: "UPDATE app_settings SET credential = NULL WHERE credential = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM credentials WHERE name = ?", arguments: [name])
            return db.changesCount > 0 ? apps : nil
        }
    }
}
