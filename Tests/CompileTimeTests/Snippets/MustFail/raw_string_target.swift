// expect: is unavailable: send to a Device, not a token: let device = try Device(token: hex)
import APNs
import APNsTesting
func go() async throws {
    try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: TokenRecordingConnector(), to: "00fc13adff78")
}
