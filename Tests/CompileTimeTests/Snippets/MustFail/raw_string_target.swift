// expect: requires the types 'String.Element' (aka 'Character') and 'Device' be equivalent
import APNs
import APNsTesting
func go() async throws {
    try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: TokenRecordingConnector(), to: "00fc13adff78")
}
