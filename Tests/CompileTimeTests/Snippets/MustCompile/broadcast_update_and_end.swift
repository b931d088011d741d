import APNs
import APNsTesting
import Foundation
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
func go(_ channel: BroadcastChannel) async throws {
    try await send(LiveActivityNotification(bundleID: "a.b", update: State(), timestamp: Date()), via: TokenRecordingConnector(), to: channel)
    try await send(LiveActivityNotification(bundleID: "a.b", end: State(), timestamp: Date(), dismissalDate: Date()), via: CertificateRecordingConnector(), to: channel)
    let manager = ChannelManager(TokenRecordingConnector())
    let created = try await manager.create(bundleID: "a.b", storagePolicy: .mostRecentMessageStored)
    _ = LiveActivityNotification(bundleID: "a.b", start: State(), attributesType: "Attrs", attributes: Attrs(), alert: LiveActivityAlert(title: "t", body: "b"), timestamp: Date(), pushInput: .channel(created))
}
