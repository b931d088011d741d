import APNs
import APNsTesting
import Foundation
struct State: Codable, Sendable { var step = 1; var eta = Date() }
struct Attrs: Codable, Sendable { var name = "x" }
struct Payload: Encodable, Sendable { var id = 1 }
func device() throws -> Device { try Device(token: "abcd") }
func updates(for states: [State]) -> [LiveActivityUpdate<State>] {
    states.map { LiveActivityNotification(bundleID: "a.b", update: $0, timestamp: Date()) }
}
func end(_ s: State) -> LiveActivityEnd<State> { LiveActivityNotification(bundleID: "a.b", end: s, timestamp: Date()) }
func start(_ s: State) -> LiveActivityStart<State, Attrs> {
    LiveActivityNotification(bundleID: "a.b", start: s, attributesType: "Attrs", attributes: Attrs(), alert: LiveActivityAlert(title: "t", body: "b"), timestamp: Date())
}
