import APNs
import APNsTesting
import Foundation
struct State: Codable, Sendable { var step = 1; var eta = Date() }
struct Attrs: Codable, Sendable { var name = "x" }
struct Payload: Encodable, Sendable { var id = 1 }
func device() throws -> Device { try Device(token: "abcd") }
func go() async throws {
    let n = LiveActivityNotification(bundleID: "a.b", start: State(), attributesType: "Attrs", attributes: Attrs(),
        alert: LiveActivityAlert(title: "t", body: .localized(key: "K", arguments: ["a"]), sound: "s.caf"),
        timestamp: Date(), pushInput: .token, staleDate: Date(), relevanceScore: 75)
    try await send(n, via: TokenRecordingConnector(), to: device())
}
