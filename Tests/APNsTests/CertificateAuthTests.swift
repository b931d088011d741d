@_spi(RawRequests) import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

@Suite struct CertificateAuthTests {
    func sendBoth(via connector: CertificateConnector, fixture: Fixture) async throws {
        try await send(
            AlertNotification(bundleID: Fixture.bundleID) {
                Alert("Hi"); Badge(1)
            }, via: connector, to: .test)
        try await send(BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: .test)
        let records = fixture.server.requests
        try #require(records.count == 2)
        #expect(records[0].authentication == .certificate(commonName: "Apple Push Services: com.example.app"))
        #expect(
            records[0].headers.map(\.description) == [
                "apns-push-type: alert", "apns-topic: com.example.app", "apns-priority: 10", "content-length: 32",
            ])
        #expect(records[0].bodyText == #"{"aps":{"alert":"Hi","badge":1}}"#)
        #expect(records[1].bodyText == #"{"aps":{"content-available":1}}"#)
        #expect(records.allSatisfy { $0[header: "authorization"] == nil })
    }

    @Test func pemCertificateAndKey() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            #expect(connector.subject.contains("CN=Apple Push Services: com.example.app"))
            try await sendBoth(via: connector, fixture: fixture)
        }
    }

    @Test func passphraseProtectedPEM() async throws {
        try await Fixture.with { fixture in
            let encrypted = try TestCredentials.encryptPrivateKey(
                pem: fixture.client.privateKeyPEM, passphrase: "correct horse")
            #expect(encrypted.contains("BEGIN ENCRYPTED PRIVATE KEY"))
            let connector = try CertificateConnector(
                certificate: .pem(fixture.client.certificatePEM), privateKey: .pem(encrypted),
                passphrase: "correct horse",
                environment: fixture.environment, transport: fixture.transport)
            try await sendBoth(via: connector, fixture: fixture)
            #expect(throws: APNsError.credential(.wrongPassphrase)) {
                try CertificateConnector(
                    certificate: .pem(fixture.client.certificatePEM), privateKey: .pem(encrypted), passphrase: "wrong",
                    environment: fixture.environment)
            }
            #expect(throws: APNsError.credential(.passphraseRequired)) {
                try CertificateConnector(
                    certificate: .pem(fixture.client.certificatePEM), privateKey: .pem(encrypted),
                    environment: fixture.environment)
            }
        }
    }

    @Test func pkcs12Bundle() async throws {
        try await Fixture.with { fixture in
            let p12 = try TestCredentials.pkcs12(
                certificatePEM: fixture.client.certificatePEM, privateKeyPEM: fixture.client.privateKeyPEM,
                password: "p12-pass")
            let connector = try CertificateConnector(
                pkcs12: .bytes(p12), password: "p12-pass", environment: fixture.environment,
                transport: fixture.transport)
            try await sendBoth(via: connector, fixture: fixture)
            #expect(throws: APNsError.credential(.wrongPassphrase)) {
                try CertificateConnector(pkcs12: .bytes(p12), password: "nope", environment: fixture.environment)
            }
        }
    }

    @Test func legacyRC2PKCS12() async throws {
        try await Fixture.with { fixture in
            let p12 = try TestCredentials.legacyPKCS12(
                certificatePEM: fixture.client.certificatePEM, privateKeyPEM: fixture.client.privateKeyPEM,
                password: "old")
            let connector = try CertificateConnector(
                pkcs12: .bytes(p12), password: "old", environment: fixture.environment, transport: fixture.transport)
            try await sendBoth(via: connector, fixture: fixture)
        }
    }

    @Test func certificateFromAnotherCAFailsTheHandshake() async throws {
        try await Fixture.with { fixture in
            let stranger = try MockCertificateAuthority().issueClientCertificate(bundleID: Fixture.bundleID)
            let connector = try CertificateConnector(
                certificate: .pem(stranger.certificatePEM), privateKey: .pem(stranger.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport)
            let error = await #expect(throws: APNsError.self) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            // With TLS 1.3 the client may finish its side of the handshake and write the request before
            // the server's alert arrives; what it may conclude depends on that timing.
            #expect(error.flatMap(transportFailure) != nil)
            #expect(fixture.server.requests.isEmpty)
        }
    }

    /// The connector refuses a topic its certificate does not cover before any I/O; sent anyway
    /// (SPI that skips the checks), the mock refuses it as APNs does.
    @Test func topicMustMatchTheCertificate() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            let notification = AlertNotification(bundleID: "com.other.app") { Alert("x") }
            await #expect(
                throws: APNsError.credential(
                    .topicNotCovered(topic: "com.other.app", pushType: .alert, covered: ["com.example.app"]))
            ) {
                try await send(notification, via: connector, to: .test)
            }
            #expect(fixture.server.requests.isEmpty)
            let response = try await connector.performWithoutRuleCheck(try notification.request(to: .test))
            #expect(response.status == 400)
            #expect(APNsRejection(response).reason == .topicDisallowed)
        }
    }
}
