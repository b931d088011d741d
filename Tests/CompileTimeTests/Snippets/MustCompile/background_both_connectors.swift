import APNs
import APNsTesting

struct Sync: Encodable, Sendable { var acme1 = "bar"; var acme2 = 42 }

func go() async throws {
    let device = try Device(token: "00fc13adff78")
    try await send(BackgroundNotification(bundleID: "com.example.app", appData: Sync()), via: TokenRecordingConnector(), to: device)
    try await send(BackgroundNotification(bundleID: "com.example.app", expiration: .immediately), via: CertificateRecordingConnector(), to: device)
}
