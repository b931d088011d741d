import APNs
@testable import APNsGateway
import APNsMockServer
import Foundation
import Testing

/// What `credential add` and `rotate` refuse because every push it would lead to fails (an app a
/// certificate or a topic-specific key does not cover, an environment outside a key's scope, a key
/// id that is not the key file's), what they say when an app moves, and a key's scope kept with it
/// and applied by its connectors. The built `apns-gateway`, on a fresh SQLite queue.
@Suite(.timeLimit(.minutes(2))) struct CredentialBindingTests {
    @Test func bindingsACredentialCannotServeAreRefusedAndMovesAreSaid() async throws {
        let authority = try MockCertificateAuthority()
        let certificate = try authority.issueClientCertificate(bundleID: "com.example.c", environments: [.sandbox])
        let keyA = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1")
        let rotatedA = MockCertificateAuthority.makeSigningKey(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA2")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bindings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func file(_ name: String, _ contents: String) throws -> String {
            let url = folder.appendingPathComponent(name)
            try contents.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let queue = try await TestStore(.sqlite)
        let database = ["--database", queue.url, "--credential-key-file", try file("kek", CredentialVault.newKey())]
        let certificateFiles = [
            "--certificate", try file("c.pem", certificate.certificatePEM),
            "--private-key", try file("c.key", certificate.privateKeyPEM),
        ]
        let keyFile = try file("AuthKey_KEYAAAAAA1.p8", keyA.privateKeyPEM)
        let keyFiles = ["--key-file", keyFile, "--key-id", "KEYAAAAAA1", "--team-id", "TEAMAAAAA1"]
        func gateway(_ arguments: [String]) throws -> (status: Int32, output: String) {
            try ManyCredentialsTests.run(arguments + database)
        }
        func refused(_ arguments: [String], saying expected: String) throws {
            let (status, output) = try gateway(arguments)
            #expect(status != 0 && output.contains(expected), "\(arguments): \(output)")
        }

        // A certificate binds only the apps it lists a topic for.
        try refused(
            [
                "credential", "add", "--name", "cert-c", "--app", "com.example.c", "--app", "com.example.other",
                "--environment", "sandbox",
            ] + certificateFiles,
            saying: "the certificate does not cover com.example.other (it covers com.example.c)")
        // A key id that is not the one in the file's name (APNs: InvalidProviderToken).
        try refused(
            [
                "credential", "add", "--name", "team-a", "--app", "com.example.a", "--environment", "sandbox",
                "--key-file", keyFile, "--key-id", "KEYAAAAAA9", "--team-id", "TEAMAAAAA1",
            ],
            saying: "--key-id KEYAAAAAA9 does not match the key file AuthKey_KEYAAAAAA1.p8")
        // A topic-specific key binds only its apps; a key scoped to one environment sends to it alone.
        try refused(
            [
                "credential", "add", "--name", "team-a", "--app", "com.example.b", "--environment", "sandbox",
                "--key-scope", "topics:sandbox:com.example.a",
            ] + keyFiles,
            saying: "the topic-specific key KEYAAAAAA1 does not cover com.example.b (it covers com.example.a)")
        try refused(
            [
                "credential", "add", "--name", "team-a", "--app", "com.example.a", "--environment", "production",
                "--key-scope", "team:sandbox",
            ] + keyFiles,
            saying: "is scoped to sandbox (--key-scope team:sandbox) and cannot send to production")
        try refused(
            [
                "credential", "add", "--name", "team-a", "--app", "com.example.a", "--environment", "sandbox",
                "--key-scope", "topics:staging:com.example.a",
            ] + keyFiles,
            saying: "--key-scope topics:staging:com.example.a is not a key scope")
        try refused(
            [
                "credential", "add", "--name", "cert-c", "--app", "com.example.c", "--environment", "sandbox",
                "--key-scope", "team",
            ] + certificateFiles,
            saying: "--key-scope is a token key's")
        #expect(try await queue.store.credentials().isEmpty, "nothing refused was stored")

        let (added, addition) = try gateway(
            ["credential", "add", "--name", "cert-c", "--app", "com.example.c", "--environment", "sandbox"]
                + certificateFiles)
        #expect(added == 0 && addition.hasPrefix("added cert-c certificate"), "\(addition)")
        #expect(!addition.contains("moved"), "\(addition)")

        // The key takes com.example.c over: the command says so, and that cert-c serves nothing now.
        let (keyed, keying) = try gateway(
            [
                "credential", "add", "--name", "team-a", "--app", "com.example.a", "--app", "com.example.c",
                "--environment", "sandbox", "--key-scope", "topics:sandbox:com.example.c,com.example.a",
            ] + keyFiles)
        #expect(keyed == 0, "\(keying)")
        #expect(
            keying.split(separator: "\n").dropFirst() == ["moved com.example.c from cert-c (which now serves no app)"],
            "\(keying)")
        let (_, listing) = try gateway(["credential", "list"])
        #expect(
            listing.contains(
                "team-a\ttoken\tteam TEAMAAAAA1 key KEYAAAAAA1 scope topics:sandbox:com.example.a,com.example.c\tsandbox"
            ), "\(listing)")

        // A rotation to another key keeps the scope stated before; its apps are checked against it.
        let rotatedFile = try file("AuthKey_KEYAAAAAA2.p8", rotatedA.privateKeyPEM)
        let rotatedFiles = ["--key-file", rotatedFile, "--key-id", "KEYAAAAAA2", "--team-id", "TEAMAAAAA1"]
        try refused(
            ["credential", "rotate", "--name", "team-a", "--app", "com.example.z"] + rotatedFiles,
            saying: "does not cover com.example.z")
        let (rotated, rotation) = try gateway(["credential", "rotate", "--name", "team-a"] + rotatedFiles)
        #expect(rotated == 0 && rotation.contains("scope topics:sandbox:com.example.a,com.example.c"), "\(rotation)")
        let stored = try #require(try await queue.store.credentials().first { $0.name == "team-a" })
        #expect(stored.keyScope == .topics(["com.example.a", "com.example.c"], environment: .sandbox))
        #expect(stored.keyID == "KEYAAAAAA2" && stored.revision == 2)

        // Its connector refuses a send the key cannot make before any byte (nothing listens there).
        var unreachable = stored
        unreachable.apnsHost = "127.0.0.1:9"
        let secret = CredentialSecret.signingKey(pem: rotatedA.privateKeyPEM)
        let connector = try CredentialConnectors.connector(
            for: unreachable, secret: secret, environment: .sandbox, transport: TransportConfiguration(), logger: nil)
        let device = try Device(token: String(repeating: "ab", count: 32))
        let notification = AlertNotification(bundleID: "com.example.other") { Alert("Hi") }
        let error = await #expect(throws: APNsError.self) { try await send(notification, via: connector, to: device) }
        #expect(
            "\(error.map { "\($0)" } ?? "")".contains("The key KEYAAAAAA2 does not cover com.example.other"),
            "\(String(describing: error))")
        await connector.shutdown(gracePeriod: .zero)

        // The app limit's rate is one budget for every instance, as the operations guide says.
        let (_, help) = try ManyCredentialsTests.run(["app", "limit", "--help"])
        #expect(help.contains("one budget shared by every"), "\(help)")
        await queue.remove()
    }

    @Test(arguments: Backend.allCases)
    func aKeyScopeIsKeptWithItsCredential(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let vault = try CredentialVault(key: Array(repeating: 1, count: 32))
        for scope in [KeyScope.team, .team(.production), .topics(["com.b", "com.a"], environment: .sandbox), nil] {
            var credential = try CredentialsTests.credential(
                "k", apps: ["com.a"], vault: vault, secret: .signingKey(pem: "pem"))
            credential.keyScope = scope
            let current = try await queue.store.credentials().first
            #expect(try await queue.store.saveCredential(credential, replacing: current?.revision))
            #expect(try await queue.store.credentials().first?.keyScope == scope, "\(String(describing: scope))")
        }
        await queue.remove()
    }
}
