@_spi(RawRequests) import APNs
import APNsMockServer
import APNsTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

/// What a certificate connector learns from its certificate, and what it refuses because of it:
/// certificates issued at test time with Apple's extensions, sends through libcurl to the mock.
@Suite struct CertificateDetailsTests {
    static let universalTopics: [PushCertificate.Topic] = [
        .init("com.example.app", kinds: ["app"]), .init("com.example.app.voip", kinds: ["voip"]),
        .init("com.example.app.complication", kinds: ["complication"]),
    ]

    func connector(
        _ fixture: Fixture, _ issued: MockCertificateAuthority.IssuedCertificate, environment: APNsEnvironment? = nil,
        logger: Logger? = nil
    ) throws -> CertificateConnector {
        try CertificateConnector(
            certificate: .pem(issued.certificatePEM), privateKey: .pem(issued.privateKeyPEM),
            environment: environment ?? fixture.environment, transport: fixture.transport, logger: logger)
    }

    @Test func universalCertificateDetails() throws {
        let issued = try MockCertificateAuthority().issueClientCertificate(
            bundleID: "com.example.app", environments: [.production, .sandbox], topics: Self.universalTopics,
            notValidBefore: Date(timeIntervalSince1970: 1_767_225_600),
            notValidAfter: Date(timeIntervalSince1970: 2_082_758_400))
        let details = try CertificateDetails(certificate: .pem(issued.certificatePEM))
        #expect(details.format == .pem)
        #expect(details.userID == "com.example.app")
        #expect(details.subject == "O=swift-apns tests,CN=Apple Push Services: com.example.app,UID=com.example.app")
        #expect(details.environments == [.sandbox, .production])
        #expect(details.topics == Self.universalTopics)
        #expect(details.notValidBefore == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(details.notValidAfter == Date(timeIntervalSince1970: 2_082_758_400))
        #expect(
            details.validity(at: Date(timeIntervalSince1970: 2_082_758_400 - 86400 * 10))
                == .expiresSoon(in: .seconds(86400 * 10)))
        #expect(details.validity(at: Date(timeIntervalSince1970: 2_082_758_401)) == .expired)
        #expect(details.validity(at: Date(timeIntervalSince1970: 1_767_225_599)) == .notYetValid)
        #expect(
            details.coveredPushTypes.map { "\($0.pushType) \($0.topic)" } == [
                "accessory com.example.app.push-type.accessory", "alert com.example.app", "background com.example.app",
                "complication com.example.app.complication",
                "liveactivity com.example.app.push-type.liveactivity", "pushtotalk com.example.app.voip-ptt",
                "voip com.example.app.voip",
            ])
        #expect(details.covers(topic: "com.example.app.voip", pushType: .voip))
        #expect(!details.covers(topic: "com.example.app.voip", pushType: .alert))
        #expect(!details.covers(topic: "com.other.app", pushType: .alert))
        #expect(details.sha256Fingerprint.split(separator: ":").count == 32)
        #expect(!details.description.contains("PRIVATE"))
        // The same facts through a PKCS#12 bundle, and through the connector.
        let p12 = try TestCredentials.pkcs12(
            certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM, password: "pw")
        let fromBundle = try CertificateDetails(pkcs12: .bytes(p12), password: "pw")
        #expect(fromBundle.format == .pkcs12)
        #expect(fromBundle.topics == details.topics && fromBundle.sha256Fingerprint == details.sha256Fingerprint)
    }

    /// The judged case: an alert through a certificate whose topics do not include the bundle id
    /// fails before any I/O, with a typed error naming the topics it covers; what it covers goes.
    @Test func alertThroughAVoIPOnlyCertificateFailsBeforeIO() async throws {
        try await Fixture.with { fixture in
            let issued = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, topics: [.init("com.example.app.voip", kinds: ["voip"])])
            let connector = try connector(fixture, issued)
            let expected = APNsError.credential(
                .topicNotCovered(topic: "com.example.app", pushType: .alert, covered: ["com.example.app.voip (voip)"]))
            await #expect(throws: expected) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }, via: connector, to: .test)
            }
            await #expect(throws: expected) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }, via: AnyConnector(connector),
                    to: .test)
            }
            await #expect(throws: expected) {
                _ = try await connector.perform(
                    try AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }.request(to: .test))
            }
            await #expect(throws: expected) {
                _ = try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }, via: connector,
                    to: [Device.test, .test])
            }
            #expect(connector.connectionsOpened == 0)
            #expect(fixture.server.requests.isEmpty)
            #expect(
                expected.description == """
                    The certificate does not cover topic com.example.app for alert pushes; it covers: com.example.app.voip (voip). \
                    Send to a topic it covers, use a certificate issued for this app and push type, or use token authentication.
                    """)
            #expect(expected.mayHaveBeenDelivered == false && expected.retryAdvice == .never)
            // Sent anyway (SPI that skips the checks), the mock refuses it as APNs does.
            let raw = try await connector.performWithoutRuleCheck(
                try AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }.request(to: .test))
            #expect(raw.status == 400 && APNsRejection(raw).reason == .topicDisallowed)
            #expect(fixture.server.requests.count == 1)
            // What it does cover is sent.
            let response = try await send(
                VoIPNotification(bundleID: Fixture.bundleID, appData: ["call": "1"]), via: connector, to: .test)
            #expect(response.status == 200)
            #expect(
                fixture.server.requests.map { $0[header: "apns-topic"] } == ["com.example.app", "com.example.app.voip"])
            #expect(fixture.server.requests.map(\.status) == [400, 200])
        }
    }

    @Test func expiredAndNotYetValidCertificatesAreRefused() async throws {
        try await Fixture.with { fixture in
            let expiry = Date(timeIntervalSince1970: 1_735_689_600)
            let expired = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, notValidBefore: expiry - 86400 * 365, notValidAfter: expiry)
            let subject = "O=swift-apns tests,CN=Apple Push Services: com.example.app,UID=com.example.app"
            #expect(throws: APNsError.credential(.certificateExpired(subject: subject, notValidAfter: expiry))) {
                try connector(fixture, expired)
            }
            let later = Date(timeIntervalSince1970: 4_102_444_800)  // 2100
            let future = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, notValidBefore: later, notValidAfter: later + 86400)
            #expect(throws: APNsError.credential(.certificateNotYetValid(subject: subject, notValidBefore: later))) {
                try connector(fixture, future)
            }
            let p12 = try TestCredentials.pkcs12(
                certificatePEM: expired.certificatePEM, privateKeyPEM: expired.privateKeyPEM, password: "pw")
            #expect(throws: APNsError.credential(.certificateExpired(subject: subject, notValidAfter: expiry))) {
                try CertificateConnector(pkcs12: .bytes(p12), password: "pw", environment: fixture.environment)
            }
        }
    }

    /// A certificate that expires while its connector lives is refused from then on, before any
    /// I/O, at the connector's calendar time (the test's clock, advanced past the expiry).
    @Test func aCertificateThatExpiresWhileItsConnectorLivesIsRefusedFromThen() async throws {
        try await Fixture.with { fixture in
            let clock = ManualWaitClock()
            let expiry = clock.date + 3600
            let issued = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, notValidBefore: clock.date - 3600, notValidAfter: expiry)
            var transport = fixture.transport
            transport.waitClock = WaitClockReference(clock)
            let connector = try CertificateConnector(
                certificate: .pem(issued.certificatePEM), privateKey: .pem(issued.privateKeyPEM),
                environment: fixture.environment, transport: transport)
            let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }
            #expect(try await send(notification, via: connector, to: .test).status == 200)
            clock.advance(by: .seconds(3601))
            let subject = "O=swift-apns tests,CN=Apple Push Services: com.example.app,UID=com.example.app"
            let truncated = Date(timeIntervalSince1970: expiry.timeIntervalSince1970.rounded(.down))
            let error = await #expect(throws: APNsError.self) {
                try await send(notification, via: connector, to: .test)
            }
            guard case .credential(.certificateExpired(let named, let notValidAfter))? = error else {
                Issue.record("not certificateExpired: \(String(describing: error))")
                return
            }
            #expect(named == subject)
            #expect(abs(notValidAfter.timeIntervalSince(truncated)) < 1)
            #expect(fixture.server.requests.count == 1)  // the second was refused before any I/O
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    @Test func certificateForTheOtherEnvironmentIsRefused() throws {
        let authority = try MockCertificateAuthority()
        let sandboxOnly = try authority.issueClientCertificate(bundleID: "com.example.app", environments: [.sandbox])
        let error = APNsError.credential(
            .certificateEnvironmentMismatch(connector: .production, certificate: [.sandbox]))
        #expect(throws: error) {
            try CertificateConnector(
                certificate: .pem(sandboxOnly.certificatePEM), privateKey: .pem(sandboxOnly.privateKeyPEM),
                environment: .production)
        }
        #expect(error.description.contains("The certificate is for the sandbox environment, not production"))
        let sandbox = try CertificateConnector(
            certificate: .pem(sandboxOnly.certificatePEM), privateKey: .pem(sandboxOnly.privateKeyPEM),
            environment: .sandbox)
        #expect(sandbox.certificate.environments == [.sandbox])
        let universal = try authority.issueClientCertificate(
            bundleID: "com.example.app", environments: [.sandbox, .production])
        for environment in [APNsEnvironment.sandbox, .production] {
            _ = try CertificateConnector(
                certificate: .pem(universal.certificatePEM), privateKey: .pem(universal.privateKeyPEM),
                environment: environment)
        }
    }

    @Test func aCertificateThatExpiresWithinThirtyDaysIsLoggedAsAWarning() async throws {
        try await Fixture.with { fixture in
            let logs = InMemoryLogHandler()
            var logger = Logger(label: "apns-test", factory: { _ in logs })
            logger.logLevel = .info
            let soon = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, notValidAfter: Date() + 86400 * 10 + 3600)
            let connector = try connector(fixture, soon, logger: logger)
            let warnings = logs.entries.filter { $0.level == .warning }
            try #require(warnings.count == 1)
            #expect(warnings[0].message.description == "APNs certificate expires soon")
            #expect(warnings[0].metadata["apns.certificate.days_left"]?.description == "10")
            #expect(
                warnings[0].metadata["apns.certificate.not_after"]?.description
                    == connector.certificate.notValidAfter.formatted(.iso8601))
            #expect(warnings[0].metadata["apns.certificate.subject"]?.description == connector.subject)
            let later = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, notValidAfter: Date() + 86400 * 31)
            let quiet = InMemoryLogHandler()
            var quietLogger = Logger(label: "apns-test", factory: { _ in quiet })
            quietLogger.logLevel = .info
            _ = try self.connector(fixture, later, logger: quietLogger)
            #expect(quiet.entries.filter { $0.level == .warning }.isEmpty)
        }
    }

    @Test func legacyCertificateWithoutATopicListCoversItsUID() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            #expect(connector.certificate.topics == [.init("com.example.app", kinds: [])])
            #expect(connector.certificate.environments.isEmpty)
            // Every push type of its bundle id goes; another bundle id is refused before any I/O, and
            // the mock (which checks the certificate's name, as APNs does) refuses it too.
            try await send(VoIPNotification(bundleID: Fixture.bundleID, appData: ["a": 1]), via: connector, to: .test)
            try await send(BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: .test)
            await #expect(
                throws: APNsError.credential(
                    .topicNotCovered(topic: "com.other.app", pushType: .alert, covered: ["com.example.app"]))
            ) {
                try await send(AlertNotification(bundleID: "com.other.app") { Alert("x") }, via: connector, to: .test)
            }
            #expect(fixture.server.requests.count == 2)
        }
    }

    @Test func signingKeyDetails() throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "DEF123GHIJ", keyID: "ABC123DEFG")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("AuthKey_ABC123DEFG.p8").path
        try Data(key.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: path))
        let details = try SigningKeyDetails(key: .file(path: path))
        #expect(details.curve == "P-256" && details.keyID == "ABC123DEFG")
        #expect(try SigningKeyDetails(key: .pem(key.privateKeyPEM)).keyID == nil)
        #expect(SigningKeyDetails.keyID(fromFileName: "/keys/AuthKey_SHORT.p8") == nil)
        #expect(ProviderTokenRules.header(keyID: "ABC123DEFG") == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(
            ProviderTokenRules.claims(teamID: "DEF123GHIJ", issuedAt: 1_767_225_600)
                == #"{"iss":"DEF123GHIJ","iat":1767225600}"#)
    }
}
