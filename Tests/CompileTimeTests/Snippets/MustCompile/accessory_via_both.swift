import APNs
import APNsTesting
func device() throws -> Device { try Device(token: "abcd") }
func go() async throws {
    let n = AccessoryNotification(
        bundleID: "a.b", encryptedData: "ZW5j", sessionIdentifier: "s", keyID: "a2V5", messageIndex: 42,
        priority: .powerConsiderate)
    try await send(n, via: TokenRecordingConnector(), to: device())
    try await send(n, via: CertificateRecordingConnector(), to: device())
}
