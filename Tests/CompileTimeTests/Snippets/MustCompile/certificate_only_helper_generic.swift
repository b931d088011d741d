import APNs
import APNsTesting
import Foundation
struct State: Codable, Sendable { var step = 1; var eta = Date() }
struct Attrs: Codable, Sendable { var name = "x" }
struct Payload: Encodable, Sendable { var id = 1 }
func device() throws -> Device { try Device(token: "abcd") }
func sendAll<C: Connector>(_ connector: C, _ d: Device) async throws where C.Authentication == CertificateAuthentication {
    try await send(MDMNotification(topic: "com.apple.mgmt.x", pushMagic: "m"), via: connector, to: d)
    try await send(BackgroundNotification(bundleID: "a.b"), via: connector, to: d)
}
