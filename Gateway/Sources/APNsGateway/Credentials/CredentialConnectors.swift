import APNs
import Crypto
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// What a notification for an app may be sent with: its credential's name, how it authenticates
/// (what push types it can send) and the environments it may send to, the first the default.
package struct CredentialPolicy: Sendable, Hashable {
    package var credential: String
    package var authenticationMethod: AuthenticationMethod
    package var environments: [GatewayEnvironment]

    package init(credential: String, authenticationMethod: AuthenticationMethod, environments: [GatewayEnvironment]) {
        self.credential = credential
        self.authenticationMethod = authenticationMethod
        self.environments = environments
    }
}

/// The connectors the dispatcher sends through: one per credential and environment, made on first
/// use from the credential's sealed secret, shared by every send for it, shut down when it has been
/// idle for ``idleAfter`` or its credential was rotated or removed (once the sends using it end).
///
/// Which credential serves an app is read from the queue every ``refreshInterval``, so running
/// instances pick up an added, rotated or removed credential within seconds, without a restart. A
/// secret is opened only to make a connector and is not kept: what stays in memory is the sealed
/// form and the connectors (which hold the key as the library does).
///
/// A ``fallback`` (the `--key-file` or `--p12` flags) serves every app no stored credential is
/// bound to: a gateway with only those flags works as it did before credentials were data.
///
/// Thread safety: `Sendable`; a `Mutex` guards the catalog and the connectors. A connector is made
/// outside the lock (it reads a key and starts a transport thread); two tasks that make the same
/// one at once keep the first and shut the other down.
public final class CredentialConnectors: Service, Sendable {
    /// Credentials not kept in the queue: one connector, already made, for every app without a
    /// stored credential.
    public struct Fallback: Sendable {
        package var policy: CredentialPolicy
        package var connector: AnyConnector

        /// The fallback's name, unless it is given another.
        public static let defaultName = "default"

        public init(connector: AnyConnector, environment: GatewayEnvironment, name: String = defaultName) {
            policy = CredentialPolicy(
                credential: name, authenticationMethod: connector.authenticationMethod, environments: [environment])
            self.connector = connector
        }
    }

    /// Why no connector can send an app's notification; the message says what to do.
    package struct LookupError: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    let store: (any GatewayStore)?
    let vault: CredentialVault?
    let fallback: Fallback?
    let transport: TransportConfiguration
    let logger: Logger
    /// How often the credentials are read again from the queue.
    package let refreshInterval: Duration
    /// How long a connector may go unused before it is shut down.
    package let idleAfter: Duration
    /// How long a retired connector's sends may take to finish once it is shut down.
    package let gracePeriod: Duration
    /// The time it reads and waits by: when a connector was last used, when the credentials are
    /// read again (``GatewayClock``).
    let clock: any GatewayClock

    /// A connector's credential as it was sealed when the connector was made: a rotation, or a
    /// removal and an add under the same name (whose revision starts again at 1), seals anew,
    /// and each seal is unique (its nonce is random), so a connector is never reused for another
    /// secret.
    private struct Key: Hashable {
        let credential: String
        let sealed: String
        let environment: GatewayEnvironment
    }

    private struct Entry {
        let connector: AnyConnector
        var lastUsed: Date
        var users = 0
    }

    private struct State {
        /// App → its credential, as last read.
        var catalog: [String: StoredCredential] = [:]
        /// Every stored credential by name, as last read.
        var byName: [String: StoredCredential] = [:]
        var connectors: [Key: Entry] = [:]
        /// Connectors of a rotated or removed credential, shut down when their last user leaves.
        var retired: [(key: Key, entry: Entry)] = []
    }

    private let state = Mutex(State())

    /// The connectors an application that embeds the gateway runs: the credentials stored in
    /// `database` (added with `apns-gateway credentials add`), opened with `vault`, and `fallback`
    /// for the apps none serves. Call ``refresh()`` once before serving, then run it as a
    /// `Service`, which keeps them current and shuts them down.
    ///
    /// - Parameters:
    ///   - vault: Opens the stored secrets; nil when no key-encryption key was given (a stored
    ///     credential then cannot be used, and says so).
    ///   - transport: Every connector's transport settings (trust, proxy, memory trim).
    public convenience init(
        database: GatewayDatabase, vault: CredentialVault?, fallback: Fallback?,
        transport: TransportConfiguration = TransportConfiguration(), logger: Logger,
        gracePeriod: Duration = .seconds(30)
    ) {
        self.init(
            store: database.store, vault: vault, fallback: fallback, transport: transport, logger: logger,
            gracePeriod: gracePeriod)
    }

    /// - Parameters:
    ///   - store: Where credentials are read; nil for the fallback alone.
    ///   - vault: Opens their secrets; nil when no key-encryption key was given (a stored
    ///     credential then cannot be used, and says so).
    ///   - transport: Every connector's transport settings (trust, proxy, memory trim).
    package init(
        store: (any GatewayStore)?, vault: CredentialVault?, fallback: Fallback?,
        transport: TransportConfiguration = TransportConfiguration(), logger: Logger,
        refreshInterval: Duration = .seconds(2), idleAfter: Duration = .seconds(600),
        gracePeriod: Duration = .seconds(30), clock: any GatewayClock = SystemGatewayClock()
    ) {
        self.store = store
        self.vault = vault
        self.fallback = fallback
        self.transport = transport
        self.logger = logger
        self.refreshInterval = refreshInterval
        self.idleAfter = idleAfter
        self.gracePeriod = gracePeriod
        self.clock = clock
    }

    /// Only `connector`, for every app: what a dispatcher made with one connector uses.
    package convenience init(_ connector: AnyConnector, logger: Logger) {
        self.init(
            store: nil, vault: nil,
            fallback: Fallback(connector: connector, environment: .sandbox), logger: logger)
    }

    /// The name of the credential that serves `app` (the fallback's for an app no stored
    /// credential serves): what its sends pause by.
    package func credentialName(for app: String) -> String {
        state.withLock { $0.catalog[app]?.name } ?? fallback?.policy.credential ?? Fallback.defaultName
    }

    /// What serves `app`: its stored credential's policy, else the fallback's, else nil.
    package func policy(for app: String) -> CredentialPolicy? {
        if let credential = state.withLock({ $0.catalog[app] }) {
            return CredentialPolicy(
                credential: credential.name, authenticationMethod: credential.authenticationMethod,
                environments: credential.environments)
        }
        guard let fallback else { return nil }
        // A gateway of one connector sends to its one environment, whatever a notification names
        // (the environment is checked when it is accepted, against ``policy(for:)``).
        return fallback.policy
    }

    /// Reads the credentials again: an added one serves its apps from now on; connectors of a
    /// rotated or removed one are retired (shut down when their sends end); those idle for
    /// ``idleAfter`` (on its clock) are shut down. A change is logged (`credentials changed`, with
    /// the names added, rotated and removed).
    public func refresh() async throws {
        guard let store else { return }
        let now = clock.now
        let credentials = try await store.credentials()
        var catalog: [String: StoredCredential] = [:]
        var byName: [String: StoredCredential] = [:]
        for credential in credentials {
            byName[credential.name] = credential
            for app in credential.apps { catalog[app] = credential }
        }
        let idleAfter = self.idleAfter
        let (closing, before) = state.withLock { state -> ([AnyConnector], [String: StoredCredential]) in
            let before = state.byName
            state.catalog = catalog
            state.byName = byName
            var closing: [AnyConnector] = []
            for (key, entry) in state.connectors {
                let current = byName[key.credential]?.sealed == key.sealed
                let idle = entry.users == 0 && now - entry.lastUsed >= idleAfter
                guard !current || idle else { continue }
                state.connectors[key] = nil
                if entry.users == 0 {
                    closing.append(entry.connector)
                } else {
                    state.retired.append((key, entry))
                }
            }
            return (closing, before)
        }
        let added = byName.keys.filter { before[$0] == nil }.sorted()
        let rotated = byName.keys.filter { before[$0] != nil && before[$0]?.sealed != byName[$0]?.sealed }.sorted()
        let removed = before.keys.filter { byName[$0] == nil }.sorted()
        if !added.isEmpty || !rotated.isEmpty || !removed.isEmpty {
            logger.info(
                "credentials changed",
                metadata: [
                    "added": "\(added.joined(separator: ","))", "rotated": "\(rotated.joined(separator: ","))",
                    "removed": "\(removed.joined(separator: ","))",
                ])
        }
        await shut(closing)
    }

    /// Runs `body` with the connector for `app` in `environment` (nil: its credential's first)
    /// and its credential's name, the connector made if it does not exist yet. A connector
    /// retired meanwhile is shut down only after `body` returns.
    func withConnector<T: Sendable>(
        for app: String, environment: GatewayEnvironment?, _ body: (AnyConnector, String) async -> T
    ) async throws(LookupError) -> T {
        let (connector, key) = try acquire(app: app, environment: environment)
        let result = await body(connector, key?.credential ?? fallback?.policy.credential ?? Fallback.defaultName)
        if let key { await release(key, connector) }
        return result
    }

    private func acquire(
        app: String, environment: GatewayEnvironment?
    ) throws(LookupError) -> (AnyConnector, Key?) {
        let credential = state.withLock { $0.catalog[app] }
        guard let credential else {
            guard let fallback else {
                throw LookupError(
                    "no credential is bound to \(app): add one with `apns-gateway credential add --app \(app) …`")
            }
            return (fallback.connector, nil)
        }
        let chosen = environment ?? credential.environments.first ?? .production
        guard credential.environments.contains(chosen) else {
            throw LookupError(
                "the credential \(credential.name) of \(app) may send to \(credential.environments.map(\.rawValue).joined(separator: " and ")), not \(chosen.rawValue)"
            )
        }
        let key = Key(credential: credential.name, sealed: credential.sealed, environment: chosen)
        let now = clock.now
        if let existing = state.withLock({ state -> AnyConnector? in
            guard var entry = state.connectors[key] else { return nil }
            entry.users += 1
            entry.lastUsed = now
            state.connectors[key] = entry
            return entry.connector
        }) {
            return (existing, key)
        }
        let made = try make(credential, environment: chosen)
        let (winner, loser) = state.withLock { state -> (AnyConnector, AnyConnector?) in
            if var entry = state.connectors[key] {
                entry.users += 1
                state.connectors[key] = entry
                return (entry.connector, made)
            }
            state.connectors[key] = Entry(connector: made, lastUsed: now, users: 1)
            return (made, nil)
        }
        if let loser { Task { await loser.shutdown(gracePeriod: .zero) } }
        return (winner, key)
    }

    private func release(_ key: Key, _ connector: AnyConnector) async {
        let now = clock.now
        let closing = state.withLock { state -> AnyConnector? in
            if var entry = state.connectors[key] {
                entry.users -= 1
                entry.lastUsed = now
                state.connectors[key] = entry
                return nil
            }
            guard let index = state.retired.firstIndex(where: { $0.key == key }) else { return nil }
            state.retired[index].entry.users -= 1
            guard state.retired[index].entry.users == 0 else { return nil }
            return state.retired.remove(at: index).entry.connector
        }
        if let closing { await shut([closing]) }
    }

    /// A connector for `credential` in `environment`, its secret opened for this alone.
    private func make(
        _ credential: StoredCredential, environment: GatewayEnvironment
    ) throws(LookupError) -> AnyConnector {
        guard let vault else {
            throw LookupError(
                "the credential \(credential.name) is sealed and this gateway has no key-encryption key: start it with --credential-key-file or --credential-key-env"
            )
        }
        do {
            let secret = try vault.open(credential)
            var logger = self.logger
            logger[metadataKey: "credential"] = "\(credential.name)"
            let connector = try Self.connector(
                for: credential, secret: secret, environment: environment, transport: transport, logger: logger)
            logger.info(
                "made a connector",
                metadata: ["environment": "\(environment.rawValue)", "revision": "\(credential.revision)"])
            return connector
        } catch let error as CredentialVaultError {
            throw LookupError(error.description)
        } catch {
            throw LookupError("the credential \(credential.name) cannot make a connector: \(error)")
        }
    }

    /// The library's connector for a credential's secret: also what `apns-gateway credential add`
    /// makes (and shuts down) to check a credential before storing it.
    package static func connector(
        for credential: StoredCredential, secret: CredentialSecret, environment: GatewayEnvironment,
        transport: TransportConfiguration, logger: Logger?
    ) throws -> AnyConnector {
        let apns = environment.apnsEnvironment(host: credential.apnsHost)
        switch secret {
        case .signingKey(let pem):
            guard let teamID = credential.teamID, let keyID = credential.keyID else {
                throw LookupError("the token credential \(credential.name) has no team id or key id")
            }
            return AnyConnector(
                try TokenConnector(
                    teamID: teamID, keyID: keyID, key: .pem(pem), scope: credential.keyScope, environment: apns,
                    transport: transport, logger: logger))
        case .pkcs12(let bytes, let password):
            return AnyConnector(
                try CertificateConnector(
                    pkcs12: .bytes(Array(bytes)), password: password, environment: apns, transport: transport,
                    logger: logger))
        case .pem(let certificate, let privateKey, let passphrase):
            return AnyConnector(
                try CertificateConnector(
                    certificate: .pem(certificate), privateKey: .pem(privateKey), passphrase: passphrase,
                    environment: apns, transport: transport, logger: logger))
        case .webhookSecret:
            throw LookupError("the credential \(credential.name) holds a webhook secret, not a key or certificate")
        }
    }

    /// The fingerprint of a secret's public part, hex SHA-256: a token key's public key (DER), a
    /// certificate's DER (`connector`'s, as the library read it).
    package static func fingerprint(of secret: CredentialSecret, connector: AnyConnector) throws -> String {
        switch secret {
        case .signingKey(let pem):
            let key = try P256.Signing.PrivateKey(pemRepresentation: pem)
            return SHA256.hash(data: key.publicKey.derRepresentation).map { String(format: "%02x", $0) }.joined()
        case .webhookSecret:
            throw LookupError("a webhook secret has no public part")
        case .pkcs12, .pem:
            guard let certificate = connector.base as? CertificateConnector else {
                throw LookupError("a certificate credential made no certificate connector")
            }
            return certificate.certificate.sha256Fingerprint.replacingOccurrences(of: ":", with: "").lowercased()
        }
    }

    /// Refreshes every ``refreshInterval`` until graceful shutdown, then shuts every connector it
    /// made down (the dispatcher, stopped before it, has finished its sends).
    public func run() async throws {
        do {
            try await refresh()
        } catch {
            logger.error("reading the credentials failed", metadata: ["error": "\(DatabaseFailure(error))"])
        }
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await self.clock.sleep(for: self.refreshInterval)
                do {
                    try await self.refresh()
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning(
                        "reading the credentials failed; using those read before",
                        metadata: ["error": "\(DatabaseFailure(error))"])
                }
            }
        }
        await shutdown()
    }

    /// Shuts every connector made so far down, letting their sends finish for ``gracePeriod``.
    public func shutdown() async {
        let all = state.withLock { state -> [AnyConnector] in
            let all = state.connectors.values.map(\.connector) + state.retired.map(\.entry.connector)
            state.connectors = [:]
            state.retired = []
            return all
        }
        await shut(all)
    }

    private func shut(_ connectors: [AnyConnector]) async {
        let grace = gracePeriod
        await withDiscardingTaskGroup { group in
            for connector in connectors { group.addTask { await connector.shutdown(gracePeriod: grace) } }
        }
    }

    /// Connectors made and not shut down (for tests).
    package var openConnectors: Int { state.withLock { $0.connectors.count + $0.retired.count } }
}
