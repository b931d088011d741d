import APNs
import Foundation
import Logging
import PostgresNIO

// API keys and credentials as PostgreSQL keeps them.

extension PostgresStore {
    package func addAPIKey(_ key: APIKey) async throws {
        let apps = key.apps.sorted().joined(separator: "\n")
        try await client.query(
            "INSERT INTO api_keys(hash, name, apps, requests_per_second) VALUES (\(key.hash), \(key.name), \(apps), \(key.requestsPerSecond))",
            logger: logger)
    }

    package func apiKey(hash: String) async throws -> APIKey? {
        let rows = try await client.query(
            "SELECT name, hash, apps, requests_per_second FROM api_keys WHERE hash = \(hash)", logger: logger)
        for try await (name, hash, apps, rate) in rows.decode((String, String, String, Double).self) {
            return APIKey(
                name: name, hash: hash, apps: Set(apps.split(separator: "\n").map(String.init)), requestsPerSecond: rate
            )
        }
        return nil
    }

    package func apiKeys() async throws -> [APIKey] {
        var keys: [APIKey] = []
        for try await (name, hash, apps, rate) in try await client.query(
            "SELECT name, hash, apps, requests_per_second FROM api_keys ORDER BY name", logger: logger
        ).decode((String, String, String, Double).self) {
            keys.append(
                APIKey(
                    name: name, hash: hash, apps: Set(apps.split(separator: "\n").map(String.init)),
                    requestsPerSecond: rate))
        }
        return keys
    }

    package func revokeAPIKey(name: String) async throws -> Bool {
        try await client.query("DELETE FROM api_keys WHERE name = \(name) RETURNING 1", logger: logger).collect().count
            > 0
    }

    package func credentials() async throws -> [StoredCredential] {
        var apps: [String: Set<String>] = [:]
        for try await (app, credential) in try await client.query(
            "SELECT app, credential FROM app_settings WHERE credential IS NOT NULL", logger: logger
        ).decode((String, String).self) {
            apps[credential, default: []].insert(app)
        }
        var credentials: [StoredCredential] = []
        for try await row in try await client.query(
            """
            SELECT name, kind, team_id, key_id, key_scope, environments, apns_host, sealed, fingerprint, revision::int8,
                updated_at
            FROM credentials ORDER BY name
            """, logger: logger
        ).decode((String, String, String?, String?, String?, String, String?, String, String, Int, Double).self) {
            credentials.append(
                try StoredCredential(
                    row: CredentialRow(
                        name: row.0, kind: row.1, teamID: row.2, keyID: row.3, keyScope: row.4, environments: row.5,
                        apnsHost: row.6, sealed: row.7, fingerprint: row.8, revision: row.9, updatedAt: row.10),
                    apps: apps[row.0] ?? []))
        }
        return credentials
    }

    package func saveCredential(_ credential: StoredCredential, replacing revision: Int?) async throws -> Bool {
        let row = CredentialRow(credential)
        let apps = credential.apps.sorted()
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> Bool in
            let saved: Int
            if let revision {
                saved = try await connection.query(
                    """
                    UPDATE credentials SET kind = \(row.kind), team_id = \(row.teamID), key_id = \(row.keyID),
                        key_scope = \(row.keyScope), environments = \(row.environments), apns_host = \(row.apnsHost), sealed = \(row.sealed),
                        fingerprint = \(row.fingerprint), revision = \(row.revision), updated_at = \(row.updatedAt)
                    WHERE name = \(row.name) AND revision = \(revision) RETURNING 1
                    """, logger: logger
                ).collect().count
            } else {
                saved = try await connection.query(
                    """
                    INSERT INTO credentials(name, kind, team_id, key_id, key_scope, environments, apns_host, sealed,
                        fingerprint, revision, updated_at)
                    VALUES (\(row.name), \(row.kind), \(row.teamID), \(row.keyID), \(row.keyScope), \(row.environments),
                        \(row.apnsHost),
                        \(row.sealed), \(row.fingerprint), \(row.revision), \(row.updatedAt))
                    ON CONFLICT (name) DO NOTHING RETURNING 1
                    """, logger: logger
                ).collect().count
            }
            guard saved == 1 else { return false }
            try await connection.query(
                "UPDATE app_settings SET credential = NULL WHERE credential = \(row.name)", logger: logger)
            try await connection.query(
                """
                INSERT INTO app_settings(app, credential) SELECT a, \(row.name) FROM unnest(\(apps)::text[]) AS a
                ON CONFLICT (app) DO UPDATE SET credential = excluded.credential
                """, logger: logger)
            return true
        }
    }

    package func removeCredential(name: String) async throws -> [String]? {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> [String]? in
            var apps: [String] = []
            for try await app in try await connection.query(
                "UPDATE app_settings SET credential = NULL WHERE credential = \(name) RETURNING app", logger: logger
            ).decode(String.self) {
                apps.append(app)
            }
            let removed = try await connection.query(
                "DELETE FROM credentials WHERE name = \(name) RETURNING 1", logger: logger
            ).collect().count
            return removed > 0 ? apps.sorted() : nil
        }
    }
}
