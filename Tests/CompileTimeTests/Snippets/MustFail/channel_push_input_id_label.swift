// expect: extraneous argument label 'id:'
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
let channel = try BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "a.b")
let input: LiveActivityPushInput = .channel(id: channel)
