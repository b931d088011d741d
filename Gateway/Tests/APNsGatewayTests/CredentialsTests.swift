import APNs
@testable import APNsGateway
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Credentials as data: sealed in the queue under a key-encryption key that is not in it, bound to
/// apps, rotated and removed while gateways serve.
@Suite struct CredentialsTests {
    static func credential(
        _ name: String, apps: Set<String>, revision: Int = 1, vault: CredentialVault, secret: CredentialSecret
    ) throws -> StoredCredential {
        StoredCredential(
            name: name, kind: .token, teamID: "TEAM000001", keyID: "KEY0000001", environments: [.sandbox],
            sealed: try vault.seal(secret, for: name, revision: revision), fingerprint: "00", revision: revision,
            apps: apps, updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func aSealedSecretOpensOnlyWithItsKeyNameAndRevision() throws {
        let vault = try CredentialVault(key: Array(CredentialVault.newKey().utf8))
        let secret = CredentialSecret.pkcs12(bytes: Data([1, 2, 3]), password: "p12-password")
        let stored = try Self.credential("team-a", apps: ["com.example.a"], vault: vault, secret: secret)
        #expect(try vault.open(stored) == secret)
        #expect(!stored.sealed.contains("p12-password"))
        // Another key, another credential's name, another revision: none opens it.
        let other = try CredentialVault(key: Array(repeating: 7, count: 32))
        #expect(throws: CredentialVaultError.self) { try other.open(stored) }
        var moved = stored
        moved.name = "team-b"
        #expect(throws: CredentialVaultError.self) { try vault.open(moved) }
        var older = stored
        older.revision = 2
        let error = #expect(throws: CredentialVaultError.self) { try vault.open(older) }
        #expect(error?.description.contains("--credential-key-file") == true)
        // What a log or a listing could show of them holds no secret.
        #expect("\(secret)" == "CredentialSecret(redacted)")
        #expect(!"\(stored)".contains(stored.sealed))
        // A key that is not 32 bytes is refused with how to make one.
        let short = #expect(throws: CredentialVaultError.self) { try CredentialVault(key: Array("short".utf8)) }
        #expect(short?.description.contains("head -c 32 /dev/urandom | base64") == true)
    }

    @Test(arguments: Backend.allCases)
    func credentialsAreAddedRotatedAndRemovedWithTheirApps(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let vault = try CredentialVault(key: Array(repeating: 1, count: 32))
        let first = try Self.credential(
            "team-a", apps: ["com.example.a", "com.example.b"], vault: vault, secret: .signingKey(pem: "first"))
        #expect(try await store.saveCredential(first, replacing: nil))
        #expect(try await store.saveCredential(first, replacing: nil) == false, "the name is taken")
        #expect(try await store.credentials() == [first])

        // A rotation names the revision it replaces: one that lost a race is refused.
        let second = try Self.credential(
            "team-a", apps: ["com.example.a"], revision: 2, vault: vault, secret: .signingKey(pem: "second"))
        #expect(try await store.saveCredential(second, replacing: 5) == false)
        #expect(try await store.saveCredential(second, replacing: 1))
        let read = try #require(try await store.credentials().first)
        #expect(read.revision == 2 && read.apps == ["com.example.a"])
        #expect(try vault.open(read) == .signingKey(pem: "second"))

        // Binding an app to another credential moves it.
        let other = try Self.credential(
            "team-b", apps: ["com.example.a", "com.example.c"], vault: vault, secret: .signingKey(pem: "other"))
        #expect(try await store.saveCredential(other, replacing: nil))
        let apps = Dictionary(uniqueKeysWithValues: try await store.credentials().map { ($0.name, $0.apps) })
        #expect(apps == ["team-a": [], "team-b": ["com.example.a", "com.example.c"]])

        #expect(try await store.removeCredential(name: "team-b") == ["com.example.a", "com.example.c"])
        #expect(try await store.removeCredential(name: "team-b") == nil)
        #expect(try await store.credentials().map(\.name) == ["team-a"])
        await queue.remove()
    }
}

/// The built `apns-gateway` with credentials as data: two apps of two teams, each signed with its
/// own team's key and sent to its own peer, a third app on a certificate; a key rotated while the
/// gateway serves; no secret in the database file, the logs or an API answer.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ManyCredentialsTests {
    /// `apns-gateway ARGUMENTS`, its status and output.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let process = TestProcess()
        process.executableURL = CrashSafetyTests.binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static func progress(of id: String, at address: String, key: String) async throws -> String {
        var request = URLRequest(url: URL(string: "http://\(address)/v1/notifications/\(id)")!)
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }

    @Test(arguments: Backend.allCases)
    func twoTeamsAndACertificateInOneGatewayRotatedWhileServing(_ backend: Backend) async throws {
        let authority = try MockCertificateAuthority()
        let keyA = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1")
        let rotatedA = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA2")
        let keyB = MockCertificateAuthority.makeSigningKey(teamID: "TEAMBBBBB1", keyID: "KEYBBBBBB1")
        /// A peer that knows `keys` alone, answering like APNs (403 for any other team's token).
        func peer(_ keys: [MockCertificateAuthority.SigningKey]) async throws -> MockAPNsServer {
            var configuration = MockAPNsServer.Configuration(signingKeys: keys)
            configuration.certificateAuthority = authority
            configuration.strict = true
            return try await MockAPNsServer.start(configuration)
        }
        let peerA = try await peer([keyA, rotatedA])
        let peerB = try await peer([keyB])
        let peerC = try await peer([])
        let client = try authority.issueClientCertificate(bundleID: "com.example.c", environments: [.sandbox])
        let password = "p12-\(UUID().uuidString)"

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func file(_ name: String, _ contents: String) throws -> String {
            let url = folder.appendingPathComponent(name)
            try contents.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let p12 = folder.appendingPathComponent("c.p12")
        try Data(
            TestCredentials.pkcs12(
                certificatePEM: client.certificatePEM, privateKeyPEM: client.privateKeyPEM, password: password)
        ).write(to: p12)
        let kek = try file("kek", CredentialVault.newKey())
        let caFile = try file("ca.pem", authority.certificatePEM)
        let queue = try await TestStore(backend)
        let database = ["--database", queue.url, "--credential-key-file", kek]
        func add(_ arguments: [String]) throws {
            let (status, output) = try Self.run(
                ["credential", "add"] + arguments + database + ["--environment", "sandbox"],
                environment: ["TEST_P12_PASSWORD": password])
            #expect(status == 0, "\(output)")
        }
        try add([
            "--name", "team-a", "--app", "com.example.a", "--key-file", try file("a.p8", keyA.privateKeyPEM),
            "--key-id", keyA.keyID, "--team-id", keyA.teamID, "--apns-host", "\(peerA.host):\(peerA.port)",
        ])
        try add([
            "--name", "team-b", "--app", "com.example.b", "--key-file", try file("b.p8", keyB.privateKeyPEM),
            "--key-id", keyB.keyID, "--team-id", keyB.teamID, "--apns-host", "\(peerB.host):\(peerB.port)",
        ])
        try add([
            "--name", "certificate-c", "--app", "com.example.c", "--p12", p12.path, "--password-env",
            "TEST_P12_PASSWORD", "--apns-host", "\(peerC.host):\(peerC.port)",
        ])
        let (listed, listing) = try Self.run(["credential", "list"] + database)
        #expect(listed == 0)
        // One line a credential (PostgreSQL's first connection may log a line beside them).
        #expect(listing.split(separator: "\n").filter { $0.contains("\t") }.count == 3, "\(listing)")
        #expect(listing.contains("team-a\ttoken\tteam TEAMAAAAA1 key KEYAAAAAA1\tsandbox\tsha256:"), "\(listing)")

        // Another key-encryption key is refused by the commands and by a start, before anything
        // could be sealed or sent with it.
        let wrongKey = [
            "--database", queue.url, "--credential-key-file", try file("other-kek", CredentialVault.newKey()),
        ]
        let (refusedAdd, refusal) = try Self.run(
            [
                "credential", "add", "--name", "other", "--app", "com.example.d", "--environment", "sandbox",
                "--key-file",
                try file("d.p8", keyB.privateKeyPEM), "--key-id", keyB.keyID, "--team-id", keyB.teamID,
            ] + wrongKey)
        #expect(refusedAdd != 0 && refusal.contains("does not open the credentials already in the queue"), "\(refusal)")
        let (refusedStart, startRefusal) = try Self.run(["serve", "--port", "0"] + wrongKey)
        #expect(
            refusedStart != 0 && startRefusal.contains("does not open with this key-encryption key"), "\(startRefusal)")

        let apiKey = GatewayAPI.makeAPIKey()
        try await queue.store.addAPIKey(
            APIKey(
                name: "all", hash: GatewayAPI.hash(apiKey: apiKey),
                apps: ["com.example.a", "com.example.b", "com.example.c"],
                requestsPerSecond: 100))
        let log = folder.appendingPathComponent("gateway.log")
        let gateway = try CrashSafetyTests.Gateway(
            arguments: database + ["--ca-file", caFile, "--log-level", "trace"], log: log)
        func post(_ app: String, device: Int, environment: String? = nil) async throws -> Int {
            let field = environment.map { #","environment":"\#($0)""# } ?? ""
            return try await CrashSafetyTests.post(
                #"{"push-type":"alert","bundle-id":"\#(app)","alert":"Hi"\#(field),"devices":["\#(String(format: "%064x", device))"]}"#,
                to: gateway.address, key: apiKey)
        }
        /// Returns once the gateway has logged APNs accepting `count` pushes since it started
        /// (each peer records a request before it answers): what the gateway does on its own
        /// schedule is awaited, not polled.
        func accepted(_ count: Int) async {
            #expect(
                await gateway.logged(count: count) { $0.contains("APNs accepted the push") },
                "the gateway never logged \(count) accepted pushes")
        }
        /// Returns once the gateway has logged reading a change of the credentials (`change`, as
        /// its log line's metadata shows it).
        func readByTheGateway(_ change: String) async throws {
            #expect(
                await gateway.logged { $0.contains("credentials changed") && $0.contains(change) },
                "the gateway never logged \(change)")
        }
        #expect(try await post("com.example.a", device: 1) == 202)
        #expect(try await post("com.example.b", device: 2) == 202)
        #expect(try await post("com.example.c", device: 3) == 202)
        // A credential for sandbox alone refuses production before anything is queued.
        #expect(try await post("com.example.a", device: 4, environment: "production") == 403)
        await accepted(3)

        // Each peer got its own app's push alone, signed by its own team (the strict mock answers
        // 403 to any other), or over the certificate.
        #expect(peerA.requests.map(\.status) == [200] && peerB.requests.map(\.status) == [200])
        if case .token(let team, _, _) = peerA.requests.first?.authentication {
            #expect(team == "TEAMAAAAA1")
        } else {
            Issue.record("A was not sent with a token: \(peerA.requests)")
        }
        #expect(peerC.requests.map(\.status) == [200])
        if case .token(let team, _, _) = peerB.requests.first?.authentication {
            #expect(team == "TEAMBBBBB1")
        } else {
            Issue.record("B was not sent with a token: \(peerB.requests)")
        }
        #expect(peerC.requests.first?.authentication == .certificate(commonName: "Apple Push Services: com.example.c"))

        // Rotated while serving: the next send signs with the new key, no restart.
        let (rotated, output) = try Self.run(
            [
                "credential", "rotate", "--name", "team-a", "--key-file", try file("a2.p8", rotatedA.privateKeyPEM),
                "--key-id", rotatedA.keyID, "--team-id", rotatedA.teamID,
            ] + database)
        #expect(rotated == 0, "\(output)")
        try await readByTheGateway("rotated=team-a")
        #expect(try await post("com.example.a", device: 5) == 202)
        await accepted(4)
        let kids = peerA.requests.map { request -> String in
            if case .token(_, let keyID, _) = request.authentication { return keyID }
            return "none"
        }
        #expect(kids == ["KEYAAAAAA1", "KEYAAAAAA2"], "\(peerA.requests)")
        #expect(peerA.requests.map(\.status) == [200, 200])

        // Removed: the app is refused at once, with what to do.
        let (removed, removal) = try Self.run(["credential", "remove", "--name", "team-b"] + database)
        #expect(removed == 0 && removal.contains("no credential serves com.example.b now"), "\(removal)")
        try await readByTheGateway("removed=team-b")
        #expect(try await post("com.example.b", device: 6) == 403)
        #expect(await gateway.terminate() == 0)

        // No private key or password in the database file (with its WAL), a log line, or an answer.
        func lines(_ pem: String) -> [String] {
            pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        }
        var secrets: [String] = [password]
        for pem in [keyA.privateKeyPEM, rotatedA.privateKeyPEM, keyB.privateKeyPEM, client.privateKeyPEM] {
            secrets += lines(pem)
        }
        let logs = try String(contentsOf: log, encoding: .utf8)
        #expect(logs.contains("made a connector"), "the logs were read")
        let storedText: String
        switch backend {
        case .sqlite:
            var stored = Data()
            for suffix in ["", "-wal", "-shm"] {
                stored += FileManager.default.contents(atPath: queue.url + suffix) ?? Data()
            }
            storedText = String(decoding: stored, as: UTF8.self)
        case .postgres:
            // Every row of every table that holds credentials or what was sent, as text.
            var rows: [String] = []
            for table in ["credentials", "app_settings", "notifications", "deliveries", "api_keys"] {
                rows += try await queue.rows("SELECT t::text FROM \(table) t")
            }
            storedText = rows.joined(separator: "\n")
        }
        #expect(storedText.contains("team-a"), "the database was read")
        for secret in secrets {
            #expect(!logs.contains(secret))
            #expect(!storedText.contains(secret))
            #expect(!listing.contains(secret))
        }
        try await peerA.stop()
        try await peerB.stop()
        try await peerC.stop()
        await queue.remove()
    }
}

/// Connectors by need: one per credential and environment, shared, retired on rotation once its
/// sends end, shut when idle; refused for an environment or an app the credentials do not serve.
@Suite struct CredentialConnectorsTests {
    @Test func connectorsAreSharedRetiredOnRotationAndShutWhenIdle() async throws {
        let queue = try await TestStore(.sqlite)
        let vault = try CredentialVault(key: Array(repeating: 5, count: 32))
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1")
        func credential(revision: Int) throws -> StoredCredential {
            StoredCredential(
                name: "team-a", kind: .token, teamID: key.teamID, keyID: key.keyID, environments: [.sandbox],
                sealed: try vault.seal(.signingKey(pem: key.privateKeyPEM), for: "team-a", revision: revision),
                fingerprint: "-", revision: revision, apps: ["com.example.a"], updatedAt: Date())
        }
        #expect(try await queue.store.saveCredential(try credential(revision: 1), replacing: nil))
        let clock = ManualGatewayClock()
        let connectors = CredentialConnectors(
            store: queue.store, vault: vault, fallback: nil, logger: Logger(label: "test"),
            idleAfter: .milliseconds(200), clock: clock)
        try await connectors.refresh()
        #expect(connectors.policy(for: "com.example.a")?.environments == [.sandbox])
        #expect(connectors.policy(for: "com.example.other") == nil)

        let first = try await connectors.withConnector(for: "com.example.a", environment: nil) { connector, name in
            "\(name) \(connector.authenticationMethod)"
        }
        #expect(first == "team-a token")
        _ = try await connectors.withConnector(for: "com.example.a", environment: .sandbox) { _, _ in 0 }
        #expect(connectors.openConnectors == 1, "one connector per credential and environment, shared")

        // Rotated while a send uses the connector: retired, and shut once that send is over.
        let rotated = try credential(revision: 2)
        try await connectors.withConnector(for: "com.example.a", environment: nil) { _, _ in
            _ = try? await queue.store.saveCredential(rotated, replacing: 1)
            try? await connectors.refresh()
            #expect(connectors.openConnectors == 1, "still in use")
        }
        #expect(connectors.openConnectors == 0)
        _ = try await connectors.withConnector(for: "com.example.a", environment: nil) { _, _ in 0 }
        #expect(connectors.openConnectors == 1, "a new one, of revision 2")
        // Idle past `idleAfter`: the time is given, not waited for.
        clock.advance(by: 1)
        try await connectors.refresh()
        #expect(connectors.openConnectors == 0, "shut when idle")

        // Removed and added again under the same name (its revision 1 again) between two reads:
        // the connector of the earlier secret is not reused.
        _ = try await connectors.withConnector(for: "com.example.a", environment: nil) { _, _ in 0 }
        #expect(connectors.openConnectors == 1)
        #expect(try await queue.store.removeCredential(name: "team-a") == ["com.example.a"])
        #expect(try await queue.store.saveCredential(try credential(revision: 1), replacing: nil))
        try await connectors.refresh()
        #expect(connectors.openConnectors == 0, "the earlier secret's connector is shut")

        let production = await #expect(throws: CredentialConnectors.LookupError.self) {
            try await connectors.withConnector(for: "com.example.a", environment: .production) { _, _ in 0 }
        }
        #expect(production?.description.contains("may send to sandbox, not production") == true)
        #expect(try await queue.store.removeCredential(name: "team-a") == ["com.example.a"])
        try await connectors.refresh()
        let removed = await #expect(throws: CredentialConnectors.LookupError.self) {
            try await connectors.withConnector(for: "com.example.a", environment: nil) { _, _ in 0 }
        }
        #expect(removed?.description.contains("credential add --app com.example.a") == true)
        await connectors.shutdown()
        await queue.remove()
    }
}
