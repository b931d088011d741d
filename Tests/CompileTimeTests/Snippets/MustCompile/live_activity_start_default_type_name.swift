import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
struct Data1: Encodable, Sendable { var id = 1 }
let device = try! Device(token: "abcd")
let now = Date()
let n = LiveActivityNotification(bundleID: "a.b", start: State(), attributes: Attrs(), alert: LiveActivityAlert(title: "t", body: "b"), timestamp: now)

// attributes-type defaults to the attributes type's name.
precondition(n.attributesType == "Attrs")
var started = n
started.alert = LiveActivityAlert(title: "new", body: "alert")   // replaceable
let update = LiveActivityNotification(bundleID: "a.b", update: State(), timestamp: now)
var silent = update
silent.alert = nil                                                // optional on updates
