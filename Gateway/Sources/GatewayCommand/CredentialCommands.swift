import APNs
import APNsGateway
import ArgumentParser
import Foundation
import Logging

/// `apns-gateway credential add|rotate|remove|list`: APNs credentials kept in the queue, sealed
/// under the key-encryption key, each serving the apps bound to it. Running gateways pick a change
/// up within seconds.
struct CredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential",
        abstract: "Manage the APNs credentials kept in the queue (sealed) and the apps each serves.",
        subcommands: [AddCredential.self, RotateCredential.self, RemoveCredential.self, ListCredentials.self])
}

/// The secret of a credential, from files and environment variables (never from the command line).
struct SecretOptions: ParsableArguments {
    @Option(name: .customLong("key-file"), help: "A .p8 signing key (token authentication).") var keyFile: String?
    @Option(name: .customLong("key-id"), help: "The key's 10-character id.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "The 10-character team id.") var teamID: String?
    @Option(
        name: .customLong("key-scope"),
        help: ArgumentHelp(
            "What the --key-file key may send, as the developer account shows it: \(KeyScope.argumentForms).",
            discussion:
                "Stored with the key: an app or environment it does not cover is refused here, and a send it cannot make is refused before any byte. Without it, APNs answers."
        )) var keyScope: String?
    @Option(name: .customLong("p12"), help: "A PKCS#12 bundle (certificate authentication).") var pkcs12: String?
    @Option(name: .customLong("password-env"), help: "Environment variable holding the --p12 password.")
    var passwordEnvironment: String?
    @Option(help: "A PEM certificate (certificate authentication, with --private-key).") var certificate: String?
    @Option(name: .customLong("private-key"), help: "The certificate's PEM private key.") var privateKey: String?
    @Option(name: .customLong("passphrase-env"), help: "Environment variable holding the private key's passphrase.")
    var passphraseEnvironment: String?

    /// A credential's secret and what is said of it in the clear.
    struct Given {
        var secret: CredentialSecret
        var kind: StoredCredential.Kind
        /// A token key's team and key ids, and its scope when stated.
        var teamID: String?
        var keyID: String?
        var keyScope: KeyScope?
    }

    /// The secret and, for a token key, its team and key ids and its scope. A key id that is not
    /// the one Apple named the key's file after (`AuthKey_<KEYID>.p8`) is refused, as `apns send`
    /// refuses it: every token signed with it would be answered InvalidProviderToken.
    func secret() throws -> Given {
        let given = [keyFile != nil, pkcs12 != nil, certificate != nil].filter { $0 }.count
        guard given == 1 else {
            throw ValidationError(
                "give one credential: --key-file with --key-id and --team-id, --p12 with --password-env, or --certificate with --private-key"
            )
        }
        guard keyScope == nil || keyFile != nil else {
            throw ValidationError("--key-scope is a token key's (--key-file); a certificate's scope is read from it")
        }
        if let keyFile {
            guard let keyID, let teamID else { throw ValidationError("--key-file needs --key-id and --team-id") }
            if let fileKeyID = SigningKeyDetails.keyID(fromFileName: keyFile), fileKeyID != keyID {
                throw ValidationError(
                    "--key-id \(keyID) does not match the key file AuthKey_\(fileKeyID).p8: Apple names a key's file after its id, and APNs refuses tokens whose key id is not the key's (InvalidProviderToken). Give --key-id \(fileKeyID), or the file of key \(keyID)."
                )
            }
            var scope: KeyScope?
            if let keyScope {
                guard let stated = KeyScope(argument: keyScope) else {
                    throw ValidationError("--key-scope \(keyScope) is not a key scope: give \(KeyScope.argumentForms)")
                }
                scope = stated
            }
            return Given(
                secret: .signingKey(pem: try Self.text(keyFile, option: "--key-file")), kind: .token, teamID: teamID,
                keyID: keyID, keyScope: scope)
        }
        if let pkcs12 {
            guard let passwordEnvironment, let password = ProcessInfo.processInfo.environment[passwordEnvironment]
            else { throw ValidationError("--p12 needs --password-env naming a set environment variable") }
            return Given(
                secret: .pkcs12(bytes: try Self.bytes(pkcs12, option: "--p12"), password: password), kind: .certificate)
        }
        guard let certificate, let privateKey else { throw ValidationError("--certificate needs --private-key") }
        var passphrase: String?
        if let passphraseEnvironment {
            guard let value = ProcessInfo.processInfo.environment[passphraseEnvironment] else {
                throw ValidationError("the environment variable \(passphraseEnvironment) is not set")
            }
            passphrase = value
        }
        return Given(
            secret: .pem(
                certificate: try Self.text(certificate, option: "--certificate"),
                privateKey: try Self.text(privateKey, option: "--private-key"), passphrase: passphrase),
            kind: .certificate)
    }

    private static func bytes(_ path: String, option: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(option) \(path) cannot be read")
        }
        return data
    }

    private static func text(_ path: String, option: String) throws -> String {
        String(decoding: try bytes(path, option: option), as: UTF8.self)
    }
}

/// Where a credential sends: its environments and, for a mock or a relay, another server.
struct PlacementOptions: ParsableArguments {
    @Option(
        help:
            "An APNs environment the credential may send to: sandbox or production; repeat for both. The first is a notification's when it names none."
    )
    var environment: [String] = []
    @Option(
        name: .customLong("apns-host"),
        help: "HOST:PORT of another APNs server (a mock, a relay) for both environments.")
    var apnsHost: String?

    func environments(required: Bool) throws -> [GatewayEnvironment]? {
        guard !environment.isEmpty else {
            if required {
                throw ValidationError(
                    "give --environment production, --environment sandbox, or both (the first is the default)")
            }
            return nil
        }
        var chosen: [GatewayEnvironment] = []
        for name in environment {
            guard let value = GatewayEnvironment(rawValue: name) else {
                throw ValidationError("--environment \(name) is not sandbox or production")
            }
            if !chosen.contains(value) { chosen.append(value) }
        }
        return chosen
    }

    func checkedHost() throws -> String? {
        guard let apnsHost else { return nil }
        guard let colon = apnsHost.lastIndex(of: ":"), let port = Int(apnsHost[apnsHost.index(after: colon)...]),
            (1...65535).contains(port), colon > apnsHost.startIndex
        else { throw ValidationError("--apns-host \(apnsHost) is not HOST:PORT") }
        return apnsHost
    }
}

extension StoredCredential {
    /// Refuses a key-encryption key that does not open the credentials already stored: every
    /// credential of a queue is sealed under one key.
    static func checkKey(_ vault: CredentialVault, opens credentials: [StoredCredential]) throws {
        guard let first = credentials.first else { return }
        do {
            _ = try vault.open(first)
        } catch {
            throw ValidationError(
                "this key-encryption key does not open the credentials already in the queue (\(first.name) among them): give the one they were sealed with"
            )
        }
    }

    /// `credential` with `secret` sealed into it at its revision, after a connector was made from
    /// it for each of its environments (which checks the key, the password, and that a certificate
    /// is for the environment), every app bound to it was found covered (``checkCovers(_:connector:)``),
    /// and its fingerprint taken.
    static func sealing(
        _ credential: StoredCredential, secret: CredentialSecret, vault: CredentialVault,
        transport: TransportConfiguration
    ) async throws -> StoredCredential {
        var sealed = credential
        if let scope = credential.keyScope {
            // Checked here, not only by the connector: one with `--apns-host` takes either environment.
            for environment in credential.environments where !scope.environments.contains(environment.keyEnvironment) {
                throw ValidationError(
                    "the key \(credential.keyID ?? "") is scoped to \(scope.environments.sorted().map(\.rawValue).joined(separator: " and ")) (--key-scope \(scope.argument)) and cannot send to \(environment.rawValue): give --environment \(scope.environments.sorted().map(\.rawValue).joined(separator: " --environment ")), or a key made for \(environment.rawValue)"
                )
            }
        }
        for environment in credential.environments {
            let connector: AnyConnector
            do {
                connector = try CredentialConnectors.connector(
                    for: credential, secret: secret, environment: environment, transport: transport, logger: nil)
            } catch {
                throw ValidationError("the credential cannot send to \(environment.rawValue): \(error)")
            }
            do {
                try checkCovers(credential, connector: connector)
                sealed.fingerprint = try CredentialConnectors.fingerprint(of: secret, connector: connector)
            } catch {
                await connector.shutdown(gracePeriod: .zero)
                throw error
            }
            await connector.shutdown(gracePeriod: .zero)
        }
        sealed.sealed = try vault.seal(secret, for: credential.name, revision: credential.revision)
        return sealed
    }
}

extension StoredCredential {
    /// Refuses a binding the credential cannot serve: an app (bundle id, or MDM topic) outside a
    /// topic-specific key's scope, or one a certificate lists no topic for. Every push for such an
    /// app would be refused unsent (or answered TopicDisallowed), so the binding is refused here.
    static func checkCovers(_ credential: StoredCredential, connector: AnyConnector) throws {
        var uncovered: [String] = []
        var covered: [String] = []
        if let scope = credential.keyScope, let bundleIDs = scope.bundleIDs {
            uncovered = credential.apps.filter { !scope.covers(bundleID: $0) }.sorted()
            covered = bundleIDs.sorted()
        } else if let certificate = (connector.base as? CertificateConnector)?.certificate, !certificate.topics.isEmpty
        {
            uncovered = credential.apps.filter { app in
                !PushType.allCases.contains { pushType in
                    pushType.authentication.contains(.certificate)
                        && certificate.covers(
                            topic: pushType == .mdm ? app : pushType.topic(forBundleID: app), pushType: pushType)
                }
            }.sorted()
            covered = certificate.topics.map(\.description)
        }
        guard !uncovered.isEmpty else { return }
        let what = credential.kind == .token ? "the topic-specific key \(credential.keyID ?? "")" : "the certificate"
        throw ValidationError(
            "\(what) does not cover \(uncovered.joined(separator: ", ")) (it covers \(covered.joined(separator: ", "))): every push for \(uncovered.count == 1 ? "it" : "them") would be refused unsent. Bind only the apps it covers, and add a credential that covers the others"
        )
    }

    /// The apps of `credential` that other credentials in `existing` serve now, each with the
    /// credential it moves from: a binding moves an app, and the command says so.
    static func moves(
        of credential: StoredCredential, from existing: [StoredCredential]
    ) -> [(app: String, from: String)] {
        existing.filter { $0.name != credential.name }.flatMap { other in
            other.apps.intersection(credential.apps).map { (app: $0, from: other.name) }
        }.sorted { $0.app < $1.app }
    }

    /// What a command prints for `moves`: one line each, and the credentials left serving nothing.
    static func describe(moves: [(app: String, from: String)], existing: [StoredCredential]) -> [String] {
        moves.map { move in
            let left = existing.first { $0.name == move.from }.map { $0.apps.subtracting(moves.map(\.app)) } ?? []
            return "moved \(move.app) from \(move.from)"
                + (left.isEmpty ? " (which now serves no app)" : "")
        }
    }
}

extension GatewayEnvironment {
    /// The environment as a key's scope names it.
    var keyEnvironment: KeyScope.Environment { self == .production ? .production : .sandbox }
}

struct AddCredential: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a credential (sealed in the queue) and bind apps to it.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "A name for the credential (shown in logs and listings).") var name: String
    @Option(
        help:
            "A bundle id (or MDM topic) it serves; repeat for more. An app bound to another credential moves (and the command says so)."
    )
    var app: [String] = []
    @OptionGroup var secret: SecretOptions
    @OptionGroup var placement: PlacementOptions

    func run() async throws {
        guard !app.isEmpty else { throw ValidationError("give at least one --app the credential serves") }
        let vault = try database.requiredVault()
        let given = try self.secret.secret()
        let draft = StoredCredential(
            name: name, kind: given.kind, teamID: given.teamID, keyID: given.keyID, keyScope: given.keyScope,
            environments: try placement.environments(required: true) ?? [], apnsHost: try placement.checkedHost(),
            sealed: "", fingerprint: "", revision: 1, apps: Set(app), updatedAt: Date())
        let credential = try await StoredCredential.sealing(
            draft, secret: given.secret, vault: vault, transport: TransportConfiguration())
        let name = self.name
        let (saved, moved) = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            let existing = try await store.credentials()
            try StoredCredential.checkKey(vault, opens: existing)
            let moves = StoredCredential.moves(of: credential, from: existing)
            let saved = try await store.saveCredential(credential, replacing: nil)
            return (saved, StoredCredential.describe(moves: moves, existing: existing))
        }
        guard saved else {
            throw ValidationError("a credential is called \(name): rotate it with `apns-gateway credential rotate`")
        }
        print("added \(credential)")
        for line in moved { print(line) }
    }
}

struct RotateCredential: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Replace a credential's secret; running gateways sign with the new one within seconds.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The credential's name.") var name: String
    @Option(help: "Bind these apps instead of those it serves now; repeat for more.") var app: [String] = []
    @OptionGroup var secret: SecretOptions
    @OptionGroup var placement: PlacementOptions

    func run() async throws {
        let vault = try database.requiredVault()
        let given = try self.secret.secret()
        let name = self.name
        let apps = app
        let environments = try placement.environments(required: false)
        let host = try placement.checkedHost()
        let transport = TransportConfiguration()
        let (rotated, moved) = try await database.withStore(logger: Logger(label: "apns-gateway")) {
            store -> (StoredCredential, [String]) in
            let all = try await store.credentials()
            try StoredCredential.checkKey(vault, opens: all)
            guard let current = all.first(where: { $0.name == name }) else {
                throw ValidationError("no credential is called \(name); `apns-gateway credential list` shows them")
            }
            // A new token key keeps the scope stated before unless another is stated.
            let scope = given.keyScope ?? (given.kind == .token && current.kind == .token ? current.keyScope : nil)
            let draft = StoredCredential(
                name: name, kind: given.kind, teamID: given.teamID, keyID: given.keyID, keyScope: scope,
                environments: environments ?? current.environments,
                apnsHost: host ?? current.apnsHost, sealed: "", fingerprint: "", revision: current.revision + 1,
                apps: apps.isEmpty ? current.apps : Set(apps), updatedAt: Date())
            let credential = try await StoredCredential.sealing(
                draft, secret: given.secret, vault: vault, transport: transport)
            let moves = StoredCredential.moves(of: credential, from: all)
            guard try await store.saveCredential(credential, replacing: current.revision) else {
                throw ValidationError("\(name) was changed by another command meanwhile; run this one again")
            }
            return (credential, StoredCredential.describe(moves: moves, existing: all))
        }
        print("rotated \(rotated)")
        for line in moved { print(line) }
    }
}

struct RemoveCredential: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a credential; the apps it served have none until bound again.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The credential's name.") var name: String

    func run() async throws {
        let name = self.name
        let apps = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.removeCredential(name: name)
        }
        guard let apps else {
            throw ValidationError("no credential is called \(name); `apns-gateway credential list` shows them")
        }
        print("removed \(name)" + (apps.isEmpty ? "" : "; no credential serves \(apps.joined(separator: ", ")) now"))
    }
}

struct ListCredentials: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print each credential's name, kind, ids, environments, fingerprint and apps (never a secret).")
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let credentials = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.credentials()
        }
        for credential in credentials {
            let ids =
                credential.kind == .token
                ? "team \(credential.teamID ?? "?") key \(credential.keyID ?? "?")"
                    + (credential.keyScope.map { " scope \($0.argument)" } ?? "") : "-"
            print(
                [
                    credential.name, credential.kind.rawValue, ids,
                    credential.environments.map(\.rawValue).joined(separator: ","),
                    "sha256:\(credential.fingerprint)", "revision \(credential.revision)",
                    credential.apps.sorted().joined(separator: ","),
                ].joined(separator: "\t"))
        }
    }
}

/// `apns-gateway app limit|list`: each app's quota and rate, and the credential that serves it.
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app", abstract: "Set and show each app's limits and credential.",
        subcommands: [LimitApp.self, ListApps.self])
}

struct LimitApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract:
            "Set an app's queue quota and accepted device-sends a second (0 for none); running gateways apply them within 5 seconds."
    )
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The bundle id (or MDM topic).") var app: String
    @Option(
        name: .customLong("max-queued"),
        help: "Unfinished device-sends the app may have queued; a request past it is answered 429 (0: no quota).")
    var maximumQueued = 0
    @Option(
        name: .customLong("device-sends-per-second"),
        help:
            "Device-sends a second the app may have accepted, on average: one budget shared by every gateway instance on the queue; a request over it is answered 429 with Retry-After (0: no limit)."
    )
    var deviceSendsPerSecond = 0.0

    func run() async throws {
        guard maximumQueued >= 0 else { throw ValidationError("--max-queued \(maximumQueued) must be 0 or more") }
        guard deviceSendsPerSecond >= 0, deviceSendsPerSecond.isFinite else {
            throw ValidationError("--device-sends-per-second \(deviceSendsPerSecond) must be 0 or a positive number")
        }
        let (app, quota, rate) = (
            self.app, maximumQueued > 0 ? maximumQueued : nil, deviceSendsPerSecond > 0 ? deviceSendsPerSecond : nil
        )
        try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.setLimits(of: app, maximumQueued: quota, deviceSendsPerSecond: rate)
        }
        print("\(app): quota \(quota.map { "\($0)" } ?? "none"), \(rate.map { "\($0)/s" } ?? "no rate limit")")
    }
}

struct ListApps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print each app with settings: its credential, quota and rate.")
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let apps = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.appSettings()
        }
        for app in apps {
            print(
                [
                    app.app, app.credential ?? "(the --key-file or --p12 flags)",
                    app.maximumQueued.map { "quota \($0)" } ?? "no quota",
                    app.deviceSendsPerSecond.map { "\($0)/s" } ?? "no rate limit",
                ].joined(separator: "\t"))
        }
    }
}
