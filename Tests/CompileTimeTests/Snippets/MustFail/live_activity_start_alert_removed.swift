// expect: 'nil' cannot be assigned to type 'LiveActivityAlert'
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
var start = LiveActivityNotification(bundleID: "a.b", start: State(), attributes: Attrs(), alert: LiveActivityAlert(title: "t", body: "b"), timestamp: now)
start.alert = nil
