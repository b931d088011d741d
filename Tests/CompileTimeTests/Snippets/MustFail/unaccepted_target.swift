// expect: cannot convert value of type 'APNsID' to expected argument type 'Device'
import APNs
import APNsTesting
func go() async throws {
    try await send(BackgroundNotification(bundleID: "com.example.app"), via: CertificateRecordingConnector(), to: APNsID())
}
