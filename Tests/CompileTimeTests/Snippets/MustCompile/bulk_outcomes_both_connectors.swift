// The unavailable wrong-connector overloads never win over an available one: a push type that
// takes both authentications sends through either connector, singly and in bulk.
import APNs
func go(_ token: TokenConnector, _ certificate: CertificateConnector, _ devices: [Device]) async throws {
    let alert = AlertNotification(bundleID: "com.example.app") { Alert("Hi") }
    for try await outcome in try bulkSendOutcomes(alert, via: certificate, to: devices) { print(outcome) }
    for try await outcome in try bulkSendOutcomes(alert, via: token, to: devices) { print(outcome) }
    try await send(alert, via: certificate, to: devices)
    try await send(alert, via: token, to: devices)
    try await send(alert, via: certificate, to: devices[0])
    try await send(MDMNotification(topic: "com.apple.mgmt.External.x", pushMagic: "m"), via: certificate, to: devices[0])
    try await send(WidgetNotification(bundleID: "com.example.app"), via: token, to: devices)
}
