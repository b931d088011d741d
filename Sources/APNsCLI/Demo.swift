import APNs
import APNsMockServer
import ArgumentParser
import Foundation

/// `apns demo`: the whole path, locally. Starts the mock APNs with a generated CA, `.p8` key and
/// client certificate, sends each push type through the real libcurl transport with each connector
/// it accepts, and prints every exact request and response.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Send all twelve push types to a local mock APNs through the connectors each accepts, printing every request and response."
    )

    /// Counts sends and failures across the demo's steps.
    final class Tally {
        var total = 0
        var failures = 0
    }

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
            print(
                "Mock APNs listening on \(server.host):\(server.port) (HTTP/2, TLS, test CA generated for this run)\n")

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

            struct Speaker: Encodable, Sendable { var activeSpeaker: String }
            struct Call: Encodable, Sendable { var callerName: String; var callID: String }
            struct Forecast: Encodable, Sendable { var high: Int; var low: Int }
            struct Delivery: Encodable, Sendable { var stopsAway: Int; var eta: Date }
            struct Order: Encodable, Sendable { var orderNumber: String }
            let mdmTopic = "com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5"
            let mdmIdentity = try authority.issueClientCertificate(bundleID: mdmTopic)
            let mdm = try CertificateConnector(
                certificate: .pem(mdmIdentity.certificatePEM), privateKey: .pem(mdmIdentity.privateKeyPEM),
                environment: environment, transport: transport)
            let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970).rounded(.down))

            let tally = Tally()
            func show(_ title: String, _ operation: () async throws -> any CustomStringConvertible) async {
                tally.total += 1
                print("== \(title)")
                let before = server.requests.count
                do {
                    let response = try await operation()
                    if let recorded = server.requests.dropFirst(before).first { print(Output.recorded(recorded)) }
                    print("-> \(response)\n")
                } catch {
                    tally.failures += 1
                    if let recorded = server.requests.dropFirst(before).first { print(Output.recorded(recorded)) }
                    print("-> FAILED: \(Failure.describe(error).0)\n")
                }
            }
            await show("alert via token connector") { try await send(alert, via: token, to: device) }
            await show("alert via certificate connector") { try await send(alert, via: certificate, to: device) }
            await show("background via token connector") { try await send(background, via: token, to: device) }
            await show("background via certificate connector") {
                try await send(background, via: certificate, to: device)
            }
            await show("widgets via token connector (token only)") {
                try await send(WidgetNotification(bundleID: bundleID), via: token, to: device)
            }
            await show("controls via token connector (token only)") {
                try await send(ControlsNotification(bundleID: bundleID), via: token, to: device)
            }
            await show("accessory via token connector (an accessory's encrypted response)") {
                try await send(
                    AccessoryNotification(
                        bundleID: bundleID, encryptedData: "ZW5jcnlwdGVkIHJlc3BvbnNl",
                        sessionIdentifier: "5A1B0C2D-3E4F-4A5B-8C6D-7E8F9A0B1C2D", keyID: "a2V5LTE=", messageIndex: 42),
                    via: token, to: device)
            }
            await show("location via token connector (token only)") {
                try await send(LocationNotification(bundleID: bundleID), via: token, to: device)
            }
            await show("fileprovider via token connector (token only)") {
                try await send(
                    FileProviderNotification(
                        bundleID: bundleID, containerIdentifier: "NSFileProviderWorkingSetContainerItemIdentifier",
                        domain: "\(bundleID).files"), via: token, to: device)
            }
            await show("mdm via certificate connector (certificate only; topic = certificate UID)") {
                try await send(
                    MDMNotification(topic: mdmTopic, pushMagic: "040ac7bf-391a-4a36-a8ab-47bd380afd33"), via: mdm,
                    to: device)
            }
            await show("pushtotalk via token connector (priority 10, expiration 0, fixed)") {
                try await send(
                    PushToTalkNotification(bundleID: bundleID, appData: Speaker(activeSpeaker: "Bob")), via: token,
                    to: device)
            }
            await show("voip via certificate connector") {
                try await send(
                    VoIPNotification(
                        bundleID: bundleID, appData: Call(callerName: "Bob", callID: "c-1"), expiration: .immediately),
                    via: certificate, to: device)
            }
            await show("complication via token connector") {
                try await send(
                    ComplicationNotification(
                        bundleID: bundleID, appData: Forecast(high: 21, low: 12), priority: .powerConsiderate),
                    via: token, to: device)
            }
            await show("liveactivity start via token connector") {
                try await send(
                    LiveActivityNotification(
                        bundleID: bundleID, start: Delivery(stopsAway: 5, eta: now.addingTimeInterval(1800)),
                        attributesType: "DeliveryAttributes", attributes: Order(orderNumber: "42"),
                        alert: LiveActivityAlert(title: "Order 42", body: "On its way", sound: "chime.caf"),
                        timestamp: now, pushInput: .token), via: token, to: device)
            }
            await show("liveactivity update via certificate connector") {
                try await send(
                    LiveActivityNotification(
                        bundleID: bundleID, update: Delivery(stopsAway: 2, eta: now.addingTimeInterval(600)),
                        timestamp: now,
                        staleDate: now.addingTimeInterval(900)), via: certificate, to: device)
            }
            await show("liveactivity end via token connector") {
                try await send(
                    LiveActivityNotification(
                        bundleID: bundleID, end: Delivery(stopsAway: 0, eta: now), timestamp: now,
                        dismissalDate: now.addingTimeInterval(3600)), via: token, to: device)
            }

            // Broadcast channels (iOS 18): create one, broadcast an update and an end, list, delete.
            let channels = ChannelManager(token)
            var channel: BroadcastChannel?
            await show("channels create (management host)") {
                let created = try await channels.create(bundleID: bundleID, storagePolicy: .noMessageStored)
                channel = created
                return "201 apns-channel-id \(created.id)"
            }
            if let channel {
                await show("liveactivity update broadcast to the channel") {
                    try await send(
                        LiveActivityNotification(
                            bundleID: bundleID, update: Delivery(stopsAway: 1, eta: now.addingTimeInterval(300)),
                            timestamp: now),
                        via: token, to: channel)
                }
                await show("liveactivity end broadcast to the channel") {
                    try await send(
                        LiveActivityNotification(
                            bundleID: bundleID, end: Delivery(stopsAway: 0, eta: now), timestamp: now),
                        via: certificate, to: channel)
                }
                await show("channels list") {
                    "200 channels \(try await channels.list(bundleID: bundleID).map(\.id))"
                }
                await show("channels delete") {
                    try await channels.delete(channel)
                    return "204 deleted \(channel.id)"
                }
            }

            await token.shutdown(gracePeriod: .zero)
            await certificate.shutdown(gracePeriod: .zero)
            await mdm.shutdown(gracePeriod: .zero)
            try await server.stop()
            print("\(tally.total - tally.failures) of \(tally.total) steps succeeded.")
            if tally.failures > 0 { throw ExitCode(1) }
        }
    }
}
