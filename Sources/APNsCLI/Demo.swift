import APNs
import APNsMockServer
import ArgumentParser
import Foundation

/// `apns demo`: the whole path, locally. Starts the mock APNs with a generated CA, `.p8` key and
/// client certificate, sends each push type through the real libcurl transport with each connector
/// it accepts, and prints every exact request and response.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send every supported push type to a local mock APNs with each connector, printing requests and responses.")

    struct Game: Encodable, Sendable {
        var gameID: String
    }

    struct Sync: Encodable, Sendable {
        var acme1: String
        var acme2: Int
    }

    func run() async throws {
        try await Failure.reporting {
            let bundleID = "com.example.poker"
            let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
            let authority = try MockCertificateAuthority()
            var configuration = MockAPNsServer.Configuration(signingKeys: [signingKey])
            configuration.certificateAuthority = authority
            let server = try await MockAPNsServer.start(configuration)
            print("Mock APNs listening on \(server.host):\(server.port) (HTTP/2, TLS, test CA generated for this run)\n")

            var transport = TransportConfiguration()
            transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
            let environment = APNsEnvironment.custom(host: server.host, port: server.port)
            let token = try TokenConnector(
                teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
                environment: environment, transport: transport)
            let client = try authority.issueClientCertificate(bundleID: bundleID)
            let certificate = try CertificateConnector(
                certificate: .pem(client.certificatePEM), privateKey: .pem(client.privateKeyPEM),
                environment: environment, transport: transport)
            let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")

            let alert = AlertNotification(bundleID: bundleID, appData: Game(gameID: "12345678")) {
                Alert {
                    Title("Game Request")
                    Subtitle("Five Card Draw")
                    Body("Bob wants to play poker")
                }
                Category("GAME_INVITATION")
                Badge(1)
            }
            let background = BackgroundNotification(bundleID: bundleID, appData: Sync(acme1: "bar", acme2: 42))

            var failures = 0
            func show(_ title: String, _ operation: () async throws -> APNsResponse) async {
                print("== \(title)")
                let before = server.requests.count
                do {
                    let response = try await operation()
                    if let recorded = server.requests.dropFirst(before).first { print(Output.recorded(recorded)) }
                    print("-> \(response)\n")
                } catch {
                    failures += 1
                    if let recorded = server.requests.dropFirst(before).first { print(Output.recorded(recorded)) }
                    print("-> FAILED: \(Failure.describe(error).0)\n")
                }
            }
            await show("alert via token connector") { try await send(alert, via: token, to: device) }
            await show("background via token connector") { try await send(background, via: token, to: device) }
            await show("alert via certificate connector") { try await send(alert, via: certificate, to: device) }
            await show("background via certificate connector") { try await send(background, via: certificate, to: device) }

            try await server.stop()
            let total = 4
            print("\(total - failures) of \(total) notifications accepted.")
            if failures > 0 { throw ExitCode(1) }
        }
    }
}
