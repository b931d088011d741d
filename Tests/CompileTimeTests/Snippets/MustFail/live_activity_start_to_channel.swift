// expect: is unavailable: only Live Activity updates and ends go to a broadcast channel
import APNs
import APNsTesting
import Foundation
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
func go(_ channel: BroadcastChannel) async throws {
    let start = LiveActivityNotification(bundleID: "a.b", start: State(), attributesType: "Attrs", attributes: Attrs(), alert: LiveActivityAlert(title: "t", body: "b"), timestamp: Date())
    try await send(start, via: TokenRecordingConnector(), to: channel)
}
