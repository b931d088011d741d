// expect: 'duplicates' is inaccessible
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
let payload = AlertPayload()
print(payload.duplicates)
