import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

@Suite struct CredentialTests {
    let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")

    @Test func badIdsAndKeysAreTypedErrors() async throws {
        #expect(throws: APNsError.credential(.invalidTeamID("TEAM"))) {
            try TokenConnector(teamID: "TEAM", keyID: "KEY0000001", key: .pem(key.privateKeyPEM), environment: .sandbox)
        }
        #expect(throws: APNsError.credential(.invalidKeyID("KEY-000001"))) {
            try TokenConnector(
                teamID: "TEAM000001", keyID: "KEY-000001", key: .pem(key.privateKeyPEM), environment: .sandbox)
        }
        #expect(throws: APNsError.self) {
            try TokenConnector(teamID: "TEAM000001", keyID: "KEY0000001", key: .pem("not a key"), environment: .sandbox)
        }
        #expect(throws: APNsError.credential(.unreadableFile(path: "/nonexistent/AuthKey.p8", reason: "no such file")))
        {
            try TokenConnector(
                teamID: "TEAM000001", keyID: "KEY0000001", key: .file(path: "/nonexistent/AuthKey.p8"),
                environment: .sandbox)
        }
        // A key file named for another key id: APNs would refuse every token (InvalidProviderToken).
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("credential-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("AuthKey_KEY0000002.p8").path
        try key.privateKeyPEM.write(toFile: file, atomically: true, encoding: .utf8)
        let mismatch = CredentialError.keyIDDoesNotMatchKeyFile(keyID: "KEY0000001", fileKeyID: "KEY0000002")
        #expect(throws: APNsError.credential(mismatch)) {
            try TokenConnector(teamID: "TEAM000001", keyID: "KEY0000001", key: .file(path: file), environment: .sandbox)
        }
        #expect(mismatch.description.contains(#"Pass keyID: "KEY0000002""#))
        let connector = try TokenConnector(
            teamID: "TEAM000001", keyID: "KEY0000002", key: .file(path: file), environment: .sandbox)
        await connector.shutdown()
        #expect(throws: APNsError.credential(.refreshIntervalOutOfRange(seconds: 600))) {
            try TokenConnector(
                teamID: "TEAM000001", keyID: "KEY0000001", key: .pem(key.privateKeyPEM), environment: .sandbox,
                refreshInterval: .seconds(600))
        }
    }

    @Test func keyFromAnotherCertificateIsRejected() throws {
        let authority = try MockCertificateAuthority()
        let one = try authority.issueClientCertificate(bundleID: "a.b")
        let two = try authority.issueClientCertificate(bundleID: "a.b")
        #expect(throws: APNsError.credential(.keyDoesNotMatchCertificate)) {
            try CertificateConnector(
                certificate: .pem(one.certificatePEM), privateKey: .pem(two.privateKeyPEM), environment: .sandbox)
        }
        #expect(throws: APNsError.self) {
            try CertificateConnector(
                certificate: .pem("garbage"), privateKey: .pem(one.privateKeyPEM), environment: .sandbox)
        }
    }

    @Test func descriptionsRevealNoSecret() throws {
        let connector = try TokenConnector(
            teamID: "TEAM000001", keyID: "KEY0000001", key: .pem(key.privateKeyPEM), environment: .sandbox)
        let authority = try MockCertificateAuthority()
        let client = try authority.issueClientCertificate(bundleID: "com.example.app")
        let encrypted = try TestCredentials.encryptPrivateKey(pem: client.privateKeyPEM, passphrase: "hunter2-secret")
        let certificateConnector = try CertificateConnector(
            certificate: .pem(client.certificatePEM), privateKey: .pem(encrypted), passphrase: "hunter2-secret",
            environment: .sandbox)
        let keyBody = key.privateKeyPEM.split(separator: "\n")[1]
        let clientKeyBody = client.privateKeyPEM.split(separator: "\n")[1]
        var dumped = ""
        dump(connector, to: &dumped)
        dump(certificateConnector, to: &dumped)
        let texts = [
            connector.description, connector.debugDescription, String(reflecting: connector), dumped,
            certificateConnector.description, certificateConnector.debugDescription,
            CredentialSource.pem(key.privateKeyPEM).description,
            CredentialError.wrongPassphrase.description,
        ]
        for text in texts {
            #expect(!text.contains(keyBody))
            #expect(!text.contains(clientKeyBody))
            #expect(!text.contains("hunter2"))
            #expect(!text.contains("PRIVATE KEY"))
        }
        #expect(
            connector.description
                == "TokenConnector(teamID: TEAM000001, keyID: KEY0000001, environment: sandbox (api.sandbox.push.apple.com:443))"
        )
    }
}
