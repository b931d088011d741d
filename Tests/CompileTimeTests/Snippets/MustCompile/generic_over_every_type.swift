import APNs
import APNsTesting
import Foundation
struct State: Codable, Sendable { var step = 1; var eta = Date() }
struct Attrs: Codable, Sendable { var name = "x" }
struct Payload: Encodable, Sendable { var id = 1 }
func device() throws -> Device { try Device(token: "abcd") }
func preview(_ n: some PushNotification) throws -> String { try n.request(to: device()).description }
func all() throws -> [String] {
    [
        try preview(WidgetNotification(bundleID: "a.b")), try preview(ControlsNotification(bundleID: "a.b")),
        try preview(LocationNotification(bundleID: "a.b")), try preview(MDMNotification(topic: "com.apple.mgmt.x", pushMagic: "m")),
        try preview(FileProviderNotification(bundleID: "a.b", containerIdentifier: "c", domain: "d")),
        try preview(PushToTalkNotification(bundleID: "a.b", appData: Payload())),
        try preview(VoIPNotification(bundleID: "a.b", appData: Payload())),
        try preview(ComplicationNotification(bundleID: "a.b", appData: Payload())),
        try preview(LiveActivityNotification(bundleID: "a.b", update: State(), timestamp: Date())),
    ]
}
