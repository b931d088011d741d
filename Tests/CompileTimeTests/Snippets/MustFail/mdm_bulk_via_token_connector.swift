// expect: is unavailable: this push type takes certificate authentication only
import APNs
func go(_ connector: TokenConnector, _ devices: [Device]) async throws {
    try await send(MDMNotification(topic: "com.apple.mgmt.External.x", pushMagic: "m"), via: connector, to: devices)
}
