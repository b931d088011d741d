// expect: 'async' call in a function that does not support concurrency
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
let connector = TokenRecordingConnector()
let summary = try send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: devices)
