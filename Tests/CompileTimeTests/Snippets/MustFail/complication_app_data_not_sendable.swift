// expect: type 'Box' does not conform to the 'Sendable' protocol
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
struct Data1: Encodable, Sendable { var id = 1 }
let device = try! Device(token: "abcd")
let now = Date()
final class Box: Encodable { var x = 1 }
let n = ComplicationNotification(bundleID: "a.b", appData: Box())
