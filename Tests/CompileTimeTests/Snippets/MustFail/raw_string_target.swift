// expect: cannot convert value of type 'String' to expected argument type 'Device'
import APNs
import APNsTesting
func go() async throws {
    try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: TokenRecordingConnector(), to: "00fc13adff78")
}
