// expect: is unavailable: this push type takes token authentication only
import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
struct Data1: Encodable, Sendable { var id = 1 }
let device = try! Device(token: "abcd")
let now = Date()
func go() async throws { try await send(LocationNotification(bundleID: "a.b"), via: CertificateRecordingConnector(), to: device) }
