// expect: is unavailable: a bulk send takes Devices, not tokens: map them first, tokens.map { try Device(tokenBytes: $0) }
import Foundation
import APNs
import APNsTesting
let connector = CertificateRecordingConnector()
let tokens: [Data] = [Data([0xab, 0xcd])]
let n = AlertNotification(bundleID: "com.example.app") { Alert("x") }
_ = try await send(n, via: connector, to: tokens)
