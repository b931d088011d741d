// expect: conform to 'Encodable'
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
struct Data1: Encodable, Sendable { var id = 1 }
let device = try! Device(token: "abcd")
let now = Date()
struct Opaque: Sendable {}
let n = LiveActivityNotification(bundleID: "a.b", update: Opaque(), timestamp: now)
