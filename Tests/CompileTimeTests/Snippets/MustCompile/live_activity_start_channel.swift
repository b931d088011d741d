import APNs
import APNsTesting
import Foundation
struct State: Codable, Sendable { var step = 1; var eta = Date() }
struct Attrs: Codable, Sendable { var name = "x" }
struct Payload: Encodable, Sendable { var id = 1 }
func device() throws -> Device { try Device(token: "abcd") }
let n = LiveActivityNotification(bundleID: "a.b", start: State(), attributesType: "Attrs", attributes: Attrs(),
    alert: LiveActivityAlert(title: "t", body: "b"), timestamp: Date(), pushInput: .channel(try BroadcastChannel(id: "Y2hhbm5lbA==", bundleID: "a.b")))
