import APNs
import APNsMockServer
import APNsVapor
import Foundation
import Testing
import Vapor

/// A mock APNs on 127.0.0.1 with a signing key generated for the test, and connectors that trust
/// its CA.
struct MockAPNs {
    static let teamID = "TEAM000001", keyID = "KEY0000001", topic = "com.example.app"
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    let server: MockAPNsServer
    let key: MockCertificateAuthority.SigningKey

    static func start() async throws -> MockAPNs {
        let key = MockCertificateAuthority.makeSigningKey(teamID: teamID, keyID: keyID)
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.strict = true
        configuration.minimumTokenUpdateInterval = nil
        return MockAPNs(server: try await MockAPNsServer.start(configuration), key: key)
    }

    var transport: TransportConfiguration {
        var transport = TransportConfiguration()
        transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
        return transport
    }

    var environment: APNsEnvironment { .custom(host: server.host, port: server.port) }

    func tokenConnector(logger: Logger? = nil) throws -> TokenConnector {
        try TokenConnector(
            teamID: Self.teamID, keyID: Self.keyID, key: .pem(key.privateKeyPEM), environment: environment,
            transport: transport, logger: logger)
    }

    func certificateConnector(bundleID: String = topic) throws -> CertificateConnector {
        let client = try server.certificateAuthority.issueClientCertificate(bundleID: bundleID)
        return try CertificateConnector(
            certificate: .pem(client.certificatePEM), privateKey: .pem(client.privateKeyPEM), environment: environment,
            transport: transport)
    }

    func stop() async throws {
        try await server.stop()
    }
}
