// expect: for-in loop requires 'BulkSendResults' to conform to 'Sequence'
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
let connector = TokenRecordingConnector()
for outcome in try bulkSendOutcomes(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: devices) { print(outcome) }
