// expect: requires that 'APNsID' conform to 'Sequence'
import APNs
import APNsTesting
func go() async throws {
    try await send(BackgroundNotification(bundleID: "com.example.app"), via: CertificateRecordingConnector(), to: APNsID())
}
