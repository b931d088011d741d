// expect: is unavailable: this push type takes certificate authentication only
import APNs
import APNsTesting
struct CertificateOnly: CertificateDeliverable {
    static var pushType: PushType { .mdm }
    var topic: String { "com.apple.mgmt.x" }
    var pushPriority: PushPriority { .immediate }
    var expiration: Expiration? { nil }
    var collapseID: CollapseID? { nil }
    var apnsID: APNsID? { nil }
    func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {}
}
func go(_ device: Device) async throws {
    try await send(CertificateOnly(), via: TokenRecordingConnector(), to: device)
}
