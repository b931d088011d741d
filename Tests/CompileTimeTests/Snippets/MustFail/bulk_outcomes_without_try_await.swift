// expect: call can throw, but the error is not handled
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
let connector = TokenRecordingConnector()
let results = try bulkSendOutcomes(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: devices)
for await outcome in results { print(outcome) }
