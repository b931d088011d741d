import APNs
import APNsTesting
import Foundation
struct State: Codable, Sendable { var step = 1; var eta = Date() }
struct Attrs: Codable, Sendable { var name = "x" }
struct Payload: Encodable, Sendable { var id = 1 }
func device() throws -> Device { try Device(token: "abcd") }
func go() async throws {
    var n = LiveActivityNotification(bundleID: "a.b", end: State(), timestamp: Date(), dismissalDate: Date())
    n.dismissalDate = nil
    try await send(n, via: TokenRecordingConnector(), to: device())
}
