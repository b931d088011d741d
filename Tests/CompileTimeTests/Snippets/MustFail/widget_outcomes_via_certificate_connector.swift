// expect: is unavailable: this push type takes token authentication only
import APNs
func go(_ connector: CertificateConnector, _ devices: [Device]) async throws {
    for try await outcome in try bulkSendOutcomes(WidgetNotification(bundleID: "com.example.app"), via: connector, to: devices) {
        print(outcome)
    }
}
