// expect: is unavailable: only Live Activity updates and ends go to a broadcast channel
import APNs
import APNsTesting
import Foundation
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
func go(_ channel: BroadcastChannel) async throws {
    try await send(BackgroundNotification(bundleID: "a.b"), via: CertificateRecordingConnector(), to: channel)
}
