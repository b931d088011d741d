import APNs
import ArgumentParser
import Foundation

/// `apns inspect FILE`: what a push certificate or `.p8` key is good for, before the first push
/// fails. Prints a table (or one JSON object with `--json`); exits 3 when the certificate cannot
/// be used now, its key does not open or match, or it does not cover a push type asked for.
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show what a push certificate (PEM, DER, PKCS#12) or .p8 signing key is good for.",
        discussion: """
            For a certificate: subject, issuer, validity, the APNs environments and topics Apple \
            issued it for, and the push types it can send. For a .p8 key: that it is an EC P-256 \
            key, the key id in its file name, and the JWT header and claims a connector would send \
            (never a signature). Exit status 3 when the certificate has expired or is not yet \
            valid, its key does not open or match, or a --push-type asked for is not covered.
            """)

    @Argument(help: "A certificate (.pem, .cer, .p12) or a .p8 signing key.") var file: String
    @Option(
        name: .customLong("key"), help: "The certificate's PEM private key, to check it belongs to the certificate.")
    var privateKey: String?
    @Option(name: .customLong("passphrase-env"), help: "Environment variable holding the private key's passphrase.")
    var passphraseEnvironment: String?
    @Option(name: .customLong("password-env"), help: "Environment variable holding the PKCS#12 password.")
    var passwordEnvironment: String?
    @Option(name: .customLong("push-type"), help: "Check that the certificate covers this push type (repeatable).")
    var pushTypes: [String] = []
    @Option(help: "With --push-type: check this topic rather than the one the certificate lists.") var topic: String?
    @Option(name: .customLong("team-id"), help: "For a .p8 key: the team id to show in the JWT claims.") var teamID:
        String?
    @Option(
        name: .customLong("key-id"), help: "For a .p8 key: the key id, when the file is not named AuthKey_<KEYID>.p8.")
    var keyID: String?
    @Option(
        name: .customLong("key-scope"),
        help: ArgumentHelp(
            "For a .p8 key: its scope as the developer account shows it: \(KeyScope.argumentForms).",
            discussion:
                "With --topic (a bundle id, or a push type's topic with --push-type): whether the key covers it."
        )) var keyScope: String?
    @Option(
        name: .customLong("issued-at"), parsing: .unconditional,
        help: "For a .p8 key: the iat to show, in seconds since 1970 (default now).")
    var issuedAt: Int?
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func run() async throws {
        try await Failure.reporting {
            let bytes = try read(file)
            let text = String(decoding: bytes.prefix(1 << 20), as: UTF8.self)
            if text.contains("-----BEGIN CERTIFICATE-----") || !text.contains("-----BEGIN") {
                try inspectCertificate(bytes, text: text)
            } else if text.contains("PRIVATE KEY-----") {
                try inspectSigningKey()
            } else {
                throw UsageError("\(file) holds neither a certificate nor a private key")
            }
        }
    }

    // MARK: Certificates

    /// What was learnt about the certificate's private key.
    enum KeyCheck: String {
        case matches = "matches the certificate"
        case notGiven = "not checked (pass --key FILE)"
        case encrypted = "encrypted: pass --passphrase-env VAR to check it"
        case inBundle = "in the bundle, matches the certificate"
    }

    private func inspectCertificate(_ bytes: [UInt8], text: String) throws {
        let details: CertificateDetails
        var keyCheck = KeyCheck.notGiven
        var keyFailure: CredentialError?
        if text.contains("-----BEGIN CERTIFICATE-----") {
            details = try CertificateDetails(certificate: .bytes(bytes))
            let keyBytes: [UInt8]? = try {
                if let privateKey { return try read(privateKey) }
                return text.contains("PRIVATE KEY-----") ? bytes : nil
            }()
            if let keyBytes {
                let keyText = String(decoding: keyBytes, as: UTF8.self)
                let passphrase = try passphraseEnvironment.map { try ConnectionOptions.secret(from: $0) }
                if passphrase == nil, keyText.contains("ENCRYPTED") {
                    keyCheck = .encrypted
                } else {
                    do {
                        _ = try CertificateDetails(
                            certificate: .bytes(bytes), privateKey: .bytes(keyBytes), passphrase: passphrase)
                        keyCheck = .matches
                    } catch {
                        keyFailure = error
                    }
                }
            }
        } else if let passwordEnvironment {
            details = try CertificateDetails(
                pkcs12: .bytes(bytes), password: try ConnectionOptions.secret(from: passwordEnvironment))
            keyCheck = .inBundle
        } else {
            do {
                details = try CertificateDetails(certificate: .bytes(bytes))
            } catch {
                throw UsageError(
                    "\(file) is not a PEM or DER certificate; if it is a PKCS#12 bundle, pass --password-env VAR")
            }
        }
        let checks = try coverageChecks(details)
        print(
            json
                ? certificateJSON(details, key: keyFailure == nil ? keyCheck : nil, checks: checks)
                : certificateTable(details, key: keyFailure == nil ? keyCheck : nil, checks: checks))
        if let keyFailure { throw keyFailure }
        try details.checkValidity()
        if let missing = checks.first(where: { !$0.covered }) {
            guard missing.pushType.authentication.contains(.certificate) else {
                throw APNsError.validation(.authenticationNotAllowed(pushType: missing.pushType, method: .certificate))
            }
            throw CredentialError.topicNotCovered(
                topic: missing.topic ?? missing.pushType.topic(forBundleID: details.userID ?? "<bundle id>"),
                pushType: missing.pushType,
                covered: details.topics.map(\.description))
        }
    }

    /// One `--push-type` asked for: the topic checked and whether the certificate covers it.
    struct CoverageCheck {
        var pushType: PushType
        var topic: String?
        var covered: Bool
    }

    private func coverageChecks(_ details: CertificateDetails) throws -> [CoverageCheck] {
        try pushTypes.map { name in
            guard let pushType = PushType(rawValue: name) else { throw APNsValidationError.unknownPushType(name) }
            guard pushType.authentication.contains(.certificate) else {
                return CoverageCheck(pushType: pushType, topic: nil, covered: false)
            }
            if let topic {
                return CoverageCheck(
                    pushType: pushType, topic: topic, covered: details.covers(topic: topic, pushType: pushType))
            }
            let listed = details.coveredPushTypes.first { $0.pushType == pushType }?.topic
            return CoverageCheck(pushType: pushType, topic: listed, covered: listed != nil || details.topics.isEmpty)
        }
    }

    static func status(_ details: CertificateDetails) -> String {
        switch details.validity() {
        case .valid: return "valid"
        case .expiresSoon(let remaining): return "expires in \(remaining.components.seconds / 86400) days"
        case .expired: return "EXPIRED"
        case .notYetValid: return "not yet valid"
        }
    }

    static func environments(_ details: CertificateDetails) -> String {
        switch details.environments {
        case []: return "not stated (either environment is tried)"
        case [.sandbox, .production]: return "sandbox, production (universal)"
        default: return details.environments.map(\.rawValue).joined(separator: ", ")
        }
    }

    private func certificateTable(_ details: CertificateDetails, key: KeyCheck?, checks: [CoverageCheck]) -> String {
        var rows: [(String, String)] = [
            ("file", file), ("format", details.format.description), ("subject", details.subject),
            ("issuer", details.issuer),
            ("serial", details.serialNumber), ("sha-256", details.sha256Fingerprint),
            ("not before", details.notValidBefore.formatted(.iso8601)),
            ("not after", details.notValidAfter.formatted(.iso8601)),
            ("status", Self.status(details)), ("environments", Self.environments(details)),
        ]
        let topics = details.topics.isEmpty ? ["none stated (every topic is tried)"] : details.topics.map(\.description)
        rows += topics.enumerated().map { ($0.offset == 0 ? "topics" : "", $0.element) }
        let covered = details.coveredPushTypes
        let width = covered.map(\.pushType.rawValue.count).max() ?? 0
        let pushTypeLines =
            covered.isEmpty
            ? [details.topics.isEmpty ? "any (the certificate names no topics)" : "none"]
            : covered.map { $0.pushType.rawValue.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.topic }
        rows += pushTypeLines.enumerated().map { ($0.offset == 0 ? "push types" : "", $0.element) }
        rows += checks.map { check in
            let verdict: String
            if !check.pushType.authentication.contains(.certificate) {
                verdict = "not covered: \(check.pushType) takes token authentication only"
            } else if let topic = check.topic {
                verdict = check.covered ? "covered (\(topic))" : "NOT covered (\(topic))"
            } else {
                verdict = check.covered ? "covered" : "NOT covered"
            }
            return ("check", "\(check.pushType): \(verdict)")
        }
        if let key { rows.append(("private key", key.rawValue)) }
        return rows.map { $0.0.padding(toLength: 14, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n")
    }

    private func certificateJSON(_ details: CertificateDetails, key: KeyCheck?, checks: [CoverageCheck]) -> String {
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        for (name, value) in [
            ("file", file), ("kind", "certificate"), ("format", details.format.rawValue), ("subject", details.subject),
            ("issuer", details.issuer), ("serialNumber", details.serialNumber),
            ("sha256Fingerprint", details.sha256Fingerprint),
            ("notValidBefore", details.notValidBefore.formatted(.iso8601)),
            ("notValidAfter", details.notValidAfter.formatted(.iso8601)),
        ] {
            writer.key(name)
            writer.string(value)
        }
        writer.key("status")
        switch details.validity() {
        case .valid: writer.string("valid")
        case .expiresSoon: writer.string("expiresSoon")
        case .expired: writer.string("expired")
        case .notYetValid: writer.string("notYetValid")
        }
        writer.key("environments")
        writer.beginArray()
        details.environments.forEach { writer.string($0.rawValue) }
        writer.endArray()
        writer.key("topics")
        writer.beginArray()
        for topic in details.topics {
            writer.beginObject()
            writer.key("topic")
            writer.string(topic.name)
            writer.key("kinds")
            writer.beginArray()
            topic.kinds.forEach { writer.string($0) }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.key("pushTypes")
        writer.beginObject()
        for (pushType, topic) in details.coveredPushTypes {
            writer.key(pushType.rawValue)
            writer.string(topic)
        }
        writer.endObject()
        if !checks.isEmpty {
            writer.key("checks")
            writer.beginObject()
            for check in checks {
                writer.key(check.pushType.rawValue)
                writer.bool(check.covered)
            }
            writer.endObject()
        }
        if let key {
            writer.key("privateKey")
            switch key {
            case .matches, .inBundle: writer.string("matches")
            case .notGiven: writer.string("notChecked")
            case .encrypted: writer.string("encrypted")
            }
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    // MARK: Signing keys

    /// `--key-scope` read, and whether it covers `--topic`'s app (nil without either).
    private func scopeCheck() throws -> (scope: KeyScope?, covers: Bool?) {
        guard let keyScope else { return (nil, nil) }
        let scope = try ConnectionOptions.keyScope(from: keyScope)
        guard let topic else { return (scope, nil) }
        var bundleIDs: [String] = []
        for name in pushTypes {
            guard let pushType = PushType(rawValue: name) else { throw APNsValidationError.unknownPushType(name) }
            guard let bundleID = pushType.bundleID(fromTopic: topic) else {
                throw UsageError("--topic \(topic) is not a topic of \(pushType.rawValue) pushes")
            }
            bundleIDs.append(bundleID)
        }
        if bundleIDs.isEmpty { bundleIDs = [topic] }
        return (scope, bundleIDs.allSatisfy(scope.covers(bundleID:)))
    }

    private func inspectSigningKey() throws {
        let details = try SigningKeyDetails(key: .file(path: file))
        let (scope, covers) = try scopeCheck()
        let id = keyID ?? details.keyID
        let header = id.map { ProviderTokenRules.header(keyID: $0) }
        let claims = teamID.map {
            ProviderTokenRules.claims(teamID: $0, issuedAt: issuedAt ?? Int(Date().timeIntervalSince1970))
        }
        if json {
            var writer = JSONWriter(capacity: 512)
            writer.beginObject()
            writer.key("file")
            writer.string(file)
            writer.key("kind")
            writer.string("signingKey")
            writer.key("curve")
            writer.string(details.curve)
            writer.key("keyID")
            if let id { writer.string(id) } else { writer.null() }
            writer.key("jwtHeader")
            if let header { writer.string(header) } else { writer.null() }
            writer.key("jwtClaims")
            if let claims { writer.string(claims) } else { writer.null() }
            if let scope {
                writer.key("keyScope")
                writer.string(scope.argument)
            }
            if let covers, let topic {
                writer.key("covers")
                writer.beginObject()
                writer.key(topic)
                writer.bool(covers)
                writer.endObject()
            }
            writer.endObject()
            print(String(decoding: writer.bytes, as: UTF8.self))
            try refuseUncovered(scope, covers, keyID: id)
            return
        }
        let idSource = keyID != nil ? "(from --key-id)" : "(from the file name)"
        let rows: [(String, String)] = [
            ("file", file),
            ("kind", "token signing key (.p8)"),
            ("key", "EC \(details.curve), signs ES256 tokens"),
            (
                "key id",
                id.map { "\($0) \(idSource)" } ?? "unknown: the file is not named AuthKey_<KEYID>.p8; pass --key-id"
            ),
            ("jwt header", header ?? "needs the key id"),
            ("jwt claims", claims ?? "pass --team-id to see them"),
            ("signature", "not shown: a signed token is a credential"),
        ]
        var scopeRows: [(String, String)] = []
        if let scope {
            let environments = scope.environments.sorted().map(\.rawValue).joined(separator: " and ")
            scopeRows.append(
                (
                    "scope",
                    scope.bundleIDs.map {
                        "topic-specific: \($0.sorted().joined(separator: ", ")), \(environments) only"
                    }
                        ?? "team: every app of the team, \(environments)\(scope.environments.count == 1 ? " only" : "")"
                ))
            if let covers, let topic { scopeRows.append(("covers", "\(topic): \(covers ? "yes" : "no")")) }
        }
        print(
            (rows + scopeRows).map { $0.0.padding(toLength: 14, withPad: " ", startingAt: 0) + $0.1 }.joined(
                separator: "\n"))
        try refuseUncovered(scope, covers, keyID: id)
    }

    /// Exit status 3 (a credential error) when `--topic` is outside the key's scope.
    private func refuseUncovered(_ scope: KeyScope?, _ covers: Bool?, keyID: String?) throws {
        guard let scope, covers == false, let topic else { return }
        throw CredentialError.keyDoesNotCoverTopic(
            keyID: keyID ?? "?", topic: topic, covered: scope.bundleIDs?.sorted() ?? [])
    }

    // MARK: Helpers

    private func read(_ path: String) throws -> [UInt8] {
        let files = FileManager.default
        guard let data = files.contents(atPath: path), !data.isEmpty else {
            let reason =
                !files.fileExists(atPath: path)
                ? "no such file"
                : !files.isReadableFile(atPath: path) ? "permission denied" : "it is empty or not a regular file"
            throw CredentialError.unreadableFile(path: path, reason: reason)
        }
        return Array(data)
    }
}
