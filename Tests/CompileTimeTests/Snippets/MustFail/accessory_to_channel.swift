// expect: is unavailable: only Live Activity updates and ends go to a broadcast channel
import APNs
import APNsTesting
func go(_ channel: BroadcastChannel) async throws {
    let n = AccessoryNotification(
        bundleID: "a.b", encryptedData: "AA==", sessionIdentifier: "s", keyID: "AA==", messageIndex: 1)
    try await send(n, via: TokenRecordingConnector(), to: channel)
}
