import APNs
import Crypto
import Foundation

/// An APNs environment a notification is sent to: the gateway's `"environment"` field, and what a
/// credential allows.
public enum GatewayEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case sandbox, production

    /// The library's environment, or another server (`HOST:PORT`) in its place.
    func apnsEnvironment(host: String?) -> APNsEnvironment {
        if let host, let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]) {
            return .custom(host: String(host[..<colon]), port: port)
        }
        return self == .production ? .production : .sandbox
    }
}

/// A credential as the queue keeps it: what it is and where it may send, in the clear; its secret
/// sealed under the gateway's key-encryption key (``CredentialVault``), which never enters the
/// queue. Each app (bundle id, or MDM topic) is bound to at most one credential.
///
/// Thread safety: a value type; `Sendable`. Its `description` shows no secret (and the sealed bytes
/// are not one without the key-encryption key).
package struct StoredCredential: Sendable, Hashable, CustomStringConvertible {
    /// A token key (`.p8`) or a certificate.
    package enum Kind: String, Sendable, Hashable { case token, certificate }

    /// The operator's name for it, unique.
    package var name: String
    package var kind: Kind
    /// A token key's team id (`iss`) and key id (`kid`).
    package var teamID: String?
    package var keyID: String?
    /// A token key's scope as the operator stated it (`--key-scope`): its connectors refuse, before
    /// any byte, a send it cannot make. Nil for a certificate, or a key whose scope was not stated.
    package var keyScope: KeyScope?
    /// The environments it may send to; the first is a notification's when it names none.
    package var environments: [GatewayEnvironment]
    /// Another APNs server (`HOST:PORT`, a mock or a relay) in place of Apple's, for both environments.
    package var apnsHost: String?
    /// The secret, sealed (``CredentialVault/seal(_:for:revision:)``), base64.
    package var sealed: String
    /// SHA-256 of the credential's public part (a token key's public key, a certificate's DER), hex:
    /// tells two keys apart without revealing either.
    package var fingerprint: String
    /// Grows with every rotation; a connector made from an earlier revision is replaced.
    package var revision: Int
    /// The apps bound to it.
    package var apps: Set<String>
    package var updatedAt: Date

    package init(
        name: String, kind: Kind, teamID: String? = nil, keyID: String? = nil, keyScope: KeyScope? = nil,
        environments: [GatewayEnvironment], apnsHost: String? = nil, sealed: String, fingerprint: String,
        revision: Int, apps: Set<String>, updatedAt: Date
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
        self.apps = apps
        self.updatedAt = updatedAt
    }

    /// How connectors made from it authenticate.
    package var authenticationMethod: AuthenticationMethod { kind == .token ? .token : .certificate }

    package var description: String {
        var parts = ["\(name)", kind.rawValue]
        if let teamID, let keyID { parts.append("team \(teamID) key \(keyID)") }
        if let keyScope { parts.append("scope \(keyScope.argument)") }
        parts.append("revision \(revision)")
        parts.append("sha256 \(fingerprint.prefix(16))…")
        return parts.joined(separator: " ")
    }
}

/// A secret as sealed: a `.p8` key's PEM, a certificate with its key (a PKCS#12 bundle and its
/// password, or PEM certificate and key with an optional passphrase), or a webhook endpoint's.
///
/// Thread safety: a value type; `Sendable`. Its `description` is redacted.
package enum CredentialSecret: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    case signingKey(pem: String)
    case pkcs12(bytes: Data, password: String)
    case pem(certificate: String, privateKey: String, passphrase: String?)
    /// A webhook endpoint's secret (``WebhookSecret/text``), sealed like a credential's under the
    /// endpoint's own name (``WebhookEndpoint/sealingName(_:)``).
    case webhookSecret(String)

    package var description: String { "CredentialSecret(redacted)" }
    package var debugDescription: String { description }
}

/// Seals and opens credential secrets with AES-GCM under a 256-bit key-encryption key that lives
/// in a file or the environment, never in the queue: the database file, a backup of it or a
/// PostgreSQL dump hold only ciphertext. Each sealed secret is bound to its credential's name and
/// revision (the additional authenticated data), so a sealed value copied onto another credential
/// or an earlier revision does not open.
///
/// Thread safety: an immutable value; `Sendable`.
public struct CredentialVault: Sendable {
    private let key: SymmetricKey

    /// A vault with `key`: 32 bytes, raw or as base64 text (surrounding whitespace ignored).
    public init(key material: [UInt8]) throws(CredentialVaultError) {
        if material.count == 32 {
            key = SymmetricKey(data: material)
            return
        }
        let text = String(decoding: material, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let decoded = Data(base64Encoded: text), decoded.count == 32 else {
            throw CredentialVaultError(
                "the key-encryption key is not 32 bytes, raw or base64: make one with `head -c 32 /dev/urandom | base64`"
            )
        }
        key = SymmetricKey(data: decoded)
    }

    /// A new random key, base64: what `apns-gateway credential new-key` prints.
    package static func newKey() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// `secret` sealed for the credential `name` at `revision`, base64.
    package func seal(
        _ secret: CredentialSecret, for name: String, revision: Int
    ) throws(CredentialVaultError) -> String {
        do {
            let plain = try JSONEncoder().encode(secret)
            let box = try AES.GCM.seal(plain, using: key, authenticating: Self.binding(name, revision))
            guard let combined = box.combined else { throw CredentialVaultError("sealing failed") }
            return combined.base64EncodedString()
        } catch let error as CredentialVaultError {
            throw error
        } catch {
            throw CredentialVaultError("sealing the credential \(name) failed")
        }
    }

    /// The secret of `credential`; an error when this vault's key is not the one it was sealed with.
    package func open(_ credential: StoredCredential) throws(CredentialVaultError) -> CredentialSecret {
        guard let secret = open(sealed: credential.sealed, name: credential.name, revision: credential.revision) else {
            throw CredentialVaultError(
                "the credential \(credential.name) (revision \(credential.revision)) does not open with this key-encryption key: give the --credential-key-file (or --credential-key-env) it was added with, or add the credential again"
            )
        }
        return secret
    }

    /// A secret sealed for `name` at `revision`; nil when this vault's key is not the one it was
    /// sealed with, or it was sealed for another name or revision.
    package func open(sealed: String, name: String, revision: Int) -> CredentialSecret? {
        guard let combined = Data(base64Encoded: sealed), let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Self.binding(name, revision))
        else { return nil }
        return try? JSONDecoder().decode(CredentialSecret.self, from: plain)
    }

    private static func binding(_ name: String, _ revision: Int) -> Data {
        Data("apns-gateway credential\u{0}\(name)\u{0}\(revision)".utf8)
    }
}

/// A key-encryption key that cannot be used, or a secret that does not open; the message says what
/// to do and holds no secret.
public struct CredentialVaultError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
