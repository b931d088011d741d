import APNs
import APNsVapor
import Foundation
import Vapor

extension APNsConnectorID<CertificateAuthentication> { static let legacy = APNsConnectorID("legacy") }
extension APNsConnectorID<TokenAuthentication> { static let shop = APNsConnectorID("shop") }
extension APNsConnectorID<RunTimeAuthentication> { static let configured = APNsConnectorID("configured") }

struct Delivery: Codable, Sendable { var stopsAway: Int }

func configure(_ app: Application, token: TokenConnector, certificate: CertificateConnector) throws {
    try app.apns.use(token)
    try app.apns.use(certificate)
    try app.apns.use(certificate, as: .legacy)
    try app.apns.use(AnyConnector(token), as: .configured)
    try app.apns.useFromEnvironment(prefix: "APNS_SHOP", as: "shop")
    app.apns.shutdownGracePeriod = .seconds(5)
}

func route(_ req: Request, device: Device, devices: [Device]) async throws {
    let alert = AlertNotification(bundleID: "com.example.app") { Alert("Hi") }
    try await req.apns.send(alert, to: device)
    try await req.apns.send(alert, via: .legacy, to: device, timeout: .seconds(5))
    try await req.apns.send(alert, via: .configured, to: device)
    try await req.apns.send(WidgetNotification(bundleID: "com.example.weather"), to: device)
    try await req.apns.send(WidgetNotification(bundleID: "com.example.weather"), via: .shop, to: device)
    try await req.apns.send(MDMNotification(topic: "com.apple.mgmt.External.0f5e", pushMagic: "magic"), to: device)
    try await req.apns.send(
        LiveActivityNotification(bundleID: "com.example.app", update: Delivery(stopsAway: 1), timestamp: .now),
        to: device)
    let summary = try await req.apns.send(alert, to: devices) { outcome in print(outcome.isAccepted) }
    print(summary)
    try await req.apns.send(alert, via: .legacy, to: devices)
    try await req.apns.send(alert, via: APNsConnectorID<TokenAuthentication>.default, to: devices)
    let connector: any Connector<TokenAuthentication> = try req.apns.connector(.shop)
    for try await outcome in try bulkSendOutcomes(alert, via: connector, to: devices) { print(outcome) }
}
