// expect: is unavailable: this push type takes token authentication only
import APNs
func go(_ connector: CertificateConnector, _ device: Device) async throws {
    try await send(WidgetNotification(bundleID: "com.example.app"), via: connector, to: device)
}
