// expect: has no member 'low'
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
struct Data1: Encodable, Sendable { var id = 1 }
let device = try! Device(token: "abcd")
let now = Date()
let n = ComplicationNotification(bundleID: "a.b", appData: Data1(), priority: .low)
