import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// `apns inspect`: what a certificate or `.p8` key is good for, compared line by line. The
/// certificates are issued at test time with Apple's extensions and fixed dates; the serial number
/// and fingerprint, which differ every run, are read back with the `openssl` command.
@Suite(
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"),
        "needs the openssl command at /usr/bin/openssl"))
struct InspectTests {
    static let authority = Result { try MockCertificateAuthority(name: "swift-apns inspect CA") }
    static let validFrom = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
    static let validUntil = Date(timeIntervalSince1970: 2_082_758_400)  // 2036-01-01T00:00:00Z
    static let universalTopics: [PushCertificate.Topic] = [
        .init("com.example.app", kinds: ["app"]), .init("com.example.app.voip", kinds: ["voip"]),
        .init("com.example.app.complication", kinds: ["complication"]),
    ]

    /// The rows after the header of a valid universal certificate with `universalTopics`.
    static let validUniversalRows = """
        status        valid
        environments  sandbox, production (universal)
        topics        com.example.app (app)
                      com.example.app.voip (voip)
                      com.example.app.complication (complication)
        push types    accessory     com.example.app.push-type.accessory
                      alert         com.example.app
                      background    com.example.app
                      complication  com.example.app.complication
                      liveactivity  com.example.app.push-type.liveactivity
                      pushtotalk    com.example.app.voip-ptt
                      voip          com.example.app.voip

        """

    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func write(_ text: String, _ name: String, in folder: URL) throws -> String {
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    /// `serial` and `sha-256` as `openssl x509` prints them (its fingerprint format is ours).
    static func opensslFacts(
        _ certificatePEM: String, in folder: URL
    ) async throws -> (serial: String, fingerprint: String) {
        let path = try write(certificatePEM, "for-openssl-\(UUID()).pem", in: folder)
        let text = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            ["x509", "-in", path, "-noout", "-serial", "-fingerprint", "-sha256"]
        ).stdout
        var serial = ""
        var fingerprint = ""
        for line in text.split(separator: "\n") {
            if line.hasPrefix("serial=") { serial = String(line.dropFirst("serial=".count)) }
            if let equals = line.firstIndex(of: "="), line.lowercased().contains("fingerprint") {
                fingerprint = String(line[line.index(after: equals)...])
            }
        }
        return (serial, fingerprint)
    }

    /// The table rows every certificate shares, for `file`.
    static func header(
        file: String, format: String, certificatePEM: String, folder: URL, notBefore: String, notAfter: String
    ) async throws -> String {
        let (serial, fingerprint) = try await opensslFacts(certificatePEM, in: folder)
        return """
            file          \(file)
            format        \(format)
            subject       O=swift-apns tests,CN=Apple Push Services: com.example.app,UID=com.example.app
            issuer        CN=swift-apns inspect CA,O=swift-apns tests
            serial        \(serial)
            sha-256       \(fingerprint)
            not before    \(notBefore)
            not after     \(notAfter)

            """
    }

    @Test func universalCertificateWithItsKeyInTheFile() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let issued = try Self.authority.get().issueClientCertificate(
            bundleID: "com.example.app", environments: [.sandbox, .production], topics: Self.universalTopics,
            notValidBefore: Self.validFrom, notValidAfter: Self.validUntil)
        let file = try Self.write(issued.certificatePEM + "\n" + issued.privateKeyPEM, "universal.pem", in: folder)
        let run = try await CLITests.apns(["inspect", file, "--push-type", "alert", "--push-type", "voip"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr == "")
        let expected =
            try await Self.header(
                file: file, format: "PEM", certificatePEM: issued.certificatePEM, folder: folder,
                notBefore: "2026-01-01T00:00:00Z", notAfter: "2036-01-01T00:00:00Z") + Self.validUniversalRows + """
                check         alert: covered (com.example.app)
                check         voip: covered (com.example.app.voip)
                private key   matches the certificate

                """
        #expect(run.stdout == expected)
    }

    @Test func sandboxOnlyCertificateWithoutATopicList() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let issued = try Self.authority.get().issueClientCertificate(
            bundleID: "com.example.app", environments: [.sandbox], notValidBefore: Self.validFrom,
            notValidAfter: Self.validUntil)
        let file = try Self.write(issued.certificatePEM, "sandbox.pem", in: folder)
        let run = try await CLITests.apns(["inspect", file])
        #expect(run.status == 0, "\(run.stderr)")
        let expected =
            try await Self.header(
                file: file, format: "PEM", certificatePEM: issued.certificatePEM, folder: folder,
                notBefore: "2026-01-01T00:00:00Z", notAfter: "2036-01-01T00:00:00Z") + """
                status        valid
                environments  sandbox
                topics        com.example.app
                push types    accessory     com.example.app.push-type.accessory
                              alert         com.example.app
                              background    com.example.app
                              complication  com.example.app.complication
                              liveactivity  com.example.app.push-type.liveactivity
                              pushtotalk    com.example.app.voip-ptt
                              voip          com.example.app.voip
                private key   not checked (pass --key FILE)

                """
        #expect(run.stdout == expected)
        let json = try await CLITests.apns(["inspect", file, "--json"])
        #expect(json.status == 0)
        let (serial, fingerprint) = try await Self.opensslFacts(issued.certificatePEM, in: folder)
        #expect(
            json.stdout == """
                {"file":"\(file)","kind":"certificate","format":"pem",\
                "subject":"O=swift-apns tests,CN=Apple Push Services: com.example.app,UID=com.example.app",\
                "issuer":"CN=swift-apns inspect CA,O=swift-apns tests","serialNumber":"\(serial)","sha256Fingerprint":"\(fingerprint)",\
                "notValidBefore":"2026-01-01T00:00:00Z","notValidAfter":"2036-01-01T00:00:00Z","status":"valid",\
                "environments":["sandbox"],"topics":[{"topic":"com.example.app","kinds":[]}],\
                "pushTypes":{"accessory":"com.example.app.push-type.accessory","alert":"com.example.app","background":"com.example.app","complication":"com.example.app.complication",\
                "liveactivity":"com.example.app.push-type.liveactivity","pushtotalk":"com.example.app.voip-ptt","voip":"com.example.app.voip"},\
                "privateKey":"notChecked"}

                """)
    }

    @Test func expiredCertificateIsShownAndFails() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let issued = try Self.authority.get().issueClientCertificate(
            bundleID: "com.example.app", environments: [.production],
            topics: [.init("com.example.app", kinds: ["app"])],
            notValidBefore: Date(timeIntervalSince1970: 1_704_067_200),
            notValidAfter: Date(timeIntervalSince1970: 1_735_689_600))
        let file = try Self.write(issued.certificatePEM, "expired.pem", in: folder)
        let run = try await CLITests.apns(["inspect", file])
        #expect(run.status == 3)
        let expected =
            try await Self.header(
                file: file, format: "PEM", certificatePEM: issued.certificatePEM, folder: folder,
                notBefore: "2024-01-01T00:00:00Z", notAfter: "2025-01-01T00:00:00Z") + """
                status        EXPIRED
                environments  production
                topics        com.example.app (app)
                push types    accessory     com.example.app.push-type.accessory
                              alert         com.example.app
                              background    com.example.app
                              liveactivity  com.example.app.push-type.liveactivity
                              pushtotalk    com.example.app.voip-ptt
                private key   not checked (pass --key FILE)

                """
        #expect(run.stdout == expected)
        #expect(
            run.stderr == """
                apns: The certificate O=swift-apns tests,CN=Apple Push Services: com.example.app,UID=com.example.app expired at \
                2025-01-01T00:00:00Z; APNs refuses it. Create a new one on the Certificates page of your developer account, or use \
                token authentication (a .p8 key does not expire).

                """)
    }

    @Test func encryptedPEMNeedsItsPassphraseToCheckTheKey() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let issued = try Self.authority.get().issueClientCertificate(
            bundleID: "com.example.app", environments: [.sandbox, .production], topics: Self.universalTopics,
            notValidBefore: Self.validFrom, notValidAfter: Self.validUntil)
        let encrypted = try TestCredentials.encryptPrivateKey(pem: issued.privateKeyPEM, passphrase: "correct horse")
        let file = try Self.write(issued.certificatePEM + "\n" + encrypted, "encrypted.pem", in: folder)
        let without = try await CLITests.apns(["inspect", file])
        #expect(without.status == 0)
        #expect(without.stdout.hasSuffix("\nprivate key   encrypted: pass --passphrase-env VAR to check it\n"))
        #expect(without.stdout.contains("\nenvironments  sandbox, production (universal)\n"))
        let with = try await CLITests.apns(
            ["inspect", file, "--passphrase-env", "INSPECT_PASS"], environment: ["INSPECT_PASS": "correct horse"])
        #expect(with.status == 0)
        #expect(with.stdout.hasSuffix("\nprivate key   matches the certificate\n"))
        let wrong = try await CLITests.apns(
            ["inspect", file, "--passphrase-env", "INSPECT_PASS"], environment: ["INSPECT_PASS": "wrong"])
        #expect(wrong.status == 3)
        #expect(!wrong.stdout.contains("private key"))
        #expect(wrong.stderr == "apns: The passphrase or password does not decrypt the key; check it.\n")
    }

    @Test func legacyRC2PKCS12() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let issued = try Self.authority.get().issueClientCertificate(
            bundleID: "com.example.app", environments: [.sandbox, .production], topics: Self.universalTopics,
            notValidBefore: Self.validFrom, notValidAfter: Self.validUntil)
        let p12 = try TestCredentials.legacyPKCS12(
            certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM, password: "old")
        let file = folder.appendingPathComponent("legacy.p12")
        try Data(p12).write(to: file)
        let run = try await CLITests.apns(
            ["inspect", file.path, "--password-env", "P12_PASS", "--push-type", "complication"],
            environment: ["P12_PASS": "old"])
        #expect(run.status == 0, "\(run.stderr)")
        let expected =
            try await Self.header(
                file: file.path, format: "PKCS#12 (legacy RC2-40 encryption)", certificatePEM: issued.certificatePEM,
                folder: folder,
                notBefore: "2026-01-01T00:00:00Z", notAfter: "2036-01-01T00:00:00Z") + Self.validUniversalRows + """
                check         complication: covered (com.example.app.complication)
                private key   in the bundle, matches the certificate

                """
        #expect(run.stdout == expected)
        let noPassword = try await CLITests.apns(["inspect", file.path])
        #expect(noPassword.status == 2)
        #expect(noPassword.stderr.contains("pass --password-env VAR"))
    }

    @Test func voipOnlyCertificateDoesNotCoverAlerts() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let issued = try Self.authority.get().issueClientCertificate(
            bundleID: "com.example.app", environments: [.production],
            topics: [.init("com.example.app.voip", kinds: ["voip"])],
            notValidBefore: Self.validFrom, notValidAfter: Self.validUntil)
        let file = try Self.write(issued.certificatePEM, "voip.pem", in: folder)
        let run = try await CLITests.apns(["inspect", file, "--push-type", "voip", "--push-type", "alert"])
        #expect(run.status == 3)
        #expect(
            run.stdout.contains(
                """
                push types    voip  com.example.app.voip
                check         voip: covered (com.example.app.voip)
                check         alert: NOT covered

                """))
        #expect(
            run.stderr == """
                apns: The certificate does not cover topic com.example.app for alert pushes; it covers: com.example.app.voip (voip). \
                Send to a topic it covers, use a certificate issued for this app and push type, or use token authentication.

                """)
        let widgets = try await CLITests.apns(["inspect", file, "--push-type", "widgets"])
        #expect(widgets.status == 2)
        #expect(
            widgets.stdout.contains("check         widgets: not covered: widgets takes token authentication only\n"))
    }

    @Test func signingKey() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = MockCertificateAuthority.makeSigningKey(teamID: "DEF123GHIJ", keyID: "ABC123DEFG")
        let file = try Self.write(key.privateKeyPEM, "AuthKey_ABC123DEFG.p8", in: folder)
        let run = try await CLITests.apns(["inspect", file, "--team-id", "DEF123GHIJ", "--issued-at", "1767225600"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout == """
                file          \(file)
                kind          token signing key (.p8)
                key           EC P-256, signs ES256 tokens
                key id        ABC123DEFG (from the file name)
                jwt header    {"alg":"ES256","kid":"ABC123DEFG"}
                jwt claims    {"iss":"DEF123GHIJ","iat":1767225600}
                signature     not shown: a signed token is a credential

                """)
        #expect(!run.stdout.contains("PRIVATE KEY"))
        let json = try await CLITests.apns(["inspect", file, "--json"])
        #expect(
            json.stdout == """
                {"file":"\(file)","kind":"signingKey","curve":"P-256","keyID":"ABC123DEFG",\
                "jwtHeader":"{\\"alg\\":\\"ES256\\",\\"kid\\":\\"ABC123DEFG\\"}","jwtClaims":null}

                """)
        let renamed = try Self.write(key.privateKeyPEM, "signing.p8", in: folder)
        let unnamed = try await CLITests.apns(["inspect", renamed])
        #expect(
            unnamed.stdout.contains("key id        unknown: the file is not named AuthKey_<KEYID>.p8; pass --key-id\n"))
    }

    /// A key's scope, as the developer account shows it, and whether it covers a topic: exit
    /// status 3, with the fix, when it does not.
    @Test func signingKeyWithItsScope() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = MockCertificateAuthority.makeSigningKey(teamID: "DEF123GHIJ", keyID: "ABC123DEFG")
        let file = try Self.write(key.privateKeyPEM, "AuthKey_ABC123DEFG.p8", in: folder)
        let scope = ["--key-scope", "topics:production:com.example.shop,com.example.news"]
        let covered = try await CLITests.apns(
            ["inspect", file, "--topic", "com.example.shop.voip", "--push-type", "voip"] + scope)
        #expect(covered.status == 0, "\(covered.stderr)")
        #expect(
            covered.stdout.hasSuffix(
                """
                signature     not shown: a signed token is a credential
                scope         topic-specific: com.example.news, com.example.shop, production only
                covers        com.example.shop.voip: yes

                """), "\(covered.stdout)")
        let team = try await CLITests.apns(["inspect", file, "--key-scope", "team:sandbox"])
        #expect(team.stdout.contains("scope         team: every app of the team, sandbox only\n"), "\(team.stdout)")
        let uncovered = try await CLITests.apns(["inspect", file, "--topic", "com.example.other", "--json"] + scope)
        #expect(uncovered.status == 3)
        #expect(
            uncovered.stdout.hasSuffix(
                #""keyScope":"topics:production:com.example.news,com.example.shop","covers":{"com.example.other":false}}"#
                    + "\n"), "\(uncovered.stdout)")
        #expect(
            uncovered.stderr.contains(
                "The key ABC123DEFG does not cover com.example.other: it is a topic-specific key for com.example.news, com.example.shop."
            ), "\(uncovered.stderr)")
        let wrong = try await CLITests.apns(["inspect", file, "--key-scope", "topics:prod:com.a"])
        #expect(wrong.status == 2 && wrong.stderr.contains("is not a key scope: give team, team:sandbox"))
    }
}
