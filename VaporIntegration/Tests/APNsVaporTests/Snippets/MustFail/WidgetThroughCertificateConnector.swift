// expect: requires that 'WidgetNotification' conform to 'CertificateDeliverable'
import APNs
import APNsVapor
import Vapor

extension APNsConnectorID<CertificateAuthentication> { static let legacy = APNsConnectorID("legacy") }

func route(_ req: Request, device: Device) async throws {
    try await req.apns.send(WidgetNotification(bundleID: "com.example.weather"), via: .legacy, to: device)
}
