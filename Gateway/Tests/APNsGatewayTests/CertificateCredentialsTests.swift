import APNs
import APNsGateway
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// The built `apns-gateway` with certificate authentication (`--p12` and `--password-env`), at
/// trace level: it sends, and neither the PKCS#12 password nor the private key reaches its logs.
@Suite struct CertificateCredentialsTests {
    @Test func aPKCS12PasswordNeverReachesTheLogs() async throws {
        let authority = try MockCertificateAuthority()
        var configuration = MockAPNsServer.Configuration()
        configuration.certificateAuthority = authority
        configuration.strict = true
        let server = try await MockAPNsServer.start(configuration)
        let client = try authority.issueClientCertificate(bundleID: "com.example.app")
        let password = "p12-\(UUID().uuidString)"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-p12-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let p12File = folder.appendingPathComponent("push.p12")
        try Data(
            TestCredentials.pkcs12(
                certificatePEM: client.certificatePEM, privateKeyPEM: client.privateKeyPEM, password: password)
        )
        .write(to: p12File)
        let caFile = folder.appendingPathComponent("ca.pem")
        try server.certificateAuthorityPEM.write(to: caFile, atomically: true, encoding: .utf8)
        let queue = try await TestStore(.sqlite)
        let apiKey = GatewayAPI.makeAPIKey()
        try await queue.store.addAPIKey(
            APIKey(
                name: "p12", hash: GatewayAPI.hash(apiKey: apiKey), apps: ["com.example.app"], requestsPerSecond: 100))

        let log = folder.appendingPathComponent("gateway.log")
        let gateway = try CrashSafetyTests.Gateway(
            arguments: [
                "--database", queue.url, "--apns-host", "\(server.host):\(server.port)", "--ca-file", caFile.path,
                "--p12", p12File.path, "--password-env", "GATEWAY_TEST_P12_PASSWORD", "--log-level", "trace",
            ],
            environment: ["GATEWAY_TEST_P12_PASSWORD": password], log: log)
        let tokens = (1...3).map { String(format: "%064x", $0) }
        let body =
            #"{"push-type":"alert","bundle-id":"com.example.app","alert":"Hi","devices":[\#(tokens.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        #expect(try await CrashSafetyTests.post(body, to: gateway.address, key: apiKey) == 202)
        // Awaited as the gateway logs APNs' answers, not polled.
        #expect(
            await gateway.logged(count: 3) { $0.contains("APNs accepted the push") },
            "the gateway never logged three accepted pushes")
        #expect(await gateway.terminate() == 0, "the gateway stops cleanly on SIGTERM")

        // Sent with the certificate: the mock verified it and accepted all three.
        #expect(Set(server.requests.map { String($0.path.dropFirst("/3/device/".count)) }) == Set(tokens))
        let logs = try String(contentsOf: log, encoding: .utf8)
        #expect(logs.contains("APNs connection"), "the trace-level logs were read")
        #expect(!logs.contains(password))
        let keyLines = client.privateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        #expect(!keyLines.isEmpty && keyLines.allSatisfy { !logs.contains($0) })
        try await server.stop()
        await queue.remove()
    }
}
