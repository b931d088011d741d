// expect: requires that 'MDMNotification' conform to 'TokenDeliverable'
import APNs
import APNsVapor
import Vapor

extension APNsConnectorID<TokenAuthentication> { static let shop = APNsConnectorID("shop") }

func route(_ req: Request, device: Device) async throws {
    try await req.apns.send(MDMNotification(topic: "com.apple.mgmt.External.0f5e", pushMagic: "magic"), via: .shop, to: device)
}
