import APNs
import Foundation

/// A credential's columns as both stores write and read them: the one place that turns a
/// ``StoredCredential`` into row values and back.
struct CredentialRow: Sendable {
    var name: String
    var kind: String
    var teamID: String?
    var keyID: String?
    /// A token key's stated scope (``KeyScope/argument``), or nil.
    var keyScope: String?
    /// The environments, comma-separated, the default first.
    var environments: String
    var apnsHost: String?
    var sealed: String
    var fingerprint: String
    var revision: Int
    var updatedAt: Double

    init(
        name: String, kind: String, teamID: String?, keyID: String?, keyScope: String?, environments: String,
        apnsHost: String?, sealed: String, fingerprint: String, revision: Int, updatedAt: Double
    ) {
        self.name = name
        self.kind = kind
        self.teamID = teamID
        self.keyID = keyID
        self.keyScope = keyScope
        self.environments = environments
        self.apnsHost = apnsHost
        self.sealed = sealed
        self.fingerprint = fingerprint
        self.revision = revision
        self.updatedAt = updatedAt
    }

    init(_ credential: StoredCredential) {
        self.init(
            name: credential.name, kind: credential.kind.rawValue, teamID: credential.teamID, keyID: credential.keyID,
            keyScope: credential.keyScope?.argument,
            environments: credential.environments.map(\.rawValue).joined(separator: ","), apnsHost: credential.apnsHost,
            sealed: credential.sealed, fingerprint: credential.fingerprint, revision: credential.revision,
            updatedAt: credential.updatedAt.timeIntervalSince1970)
    }
}

extension StoredCredential {
    /// The credential a row holds; a ``StoreError`` for a kind or environment this version does not know.
    init(row: CredentialRow, apps: Set<String>) throws {
        guard let kind = Kind(rawValue: row.kind) else {
            throw StoreError("the credential \(row.name) is of a kind this gateway does not know (\(row.kind))")
        }
        var keyScope: KeyScope?
        if let text = row.keyScope {
            guard let scope = KeyScope(argument: text) else {
                throw StoreError("the credential \(row.name) has a key scope this gateway does not know (\(text))")
            }
            keyScope = scope
        }
        var environments: [GatewayEnvironment] = []
        for name in row.environments.split(separator: ",") {
            guard let environment = GatewayEnvironment(rawValue: String(name)) else {
                throw StoreError("the credential \(row.name) names an unknown environment (\(name))")
            }
            environments.append(environment)
        }
        self.init(
            name: row.name, kind: kind, teamID: row.teamID, keyID: row.keyID, keyScope: keyScope,
            environments: environments,
            apnsHost: row.apnsHost, sealed: row.sealed, fingerprint: row.fingerprint, revision: row.revision,
            apps: apps, updatedAt: Date(timeIntervalSince1970: row.updatedAt))
    }
}
