import APNs

func go(notification: AlertNotification<NoAppData>, device: Device) async throws {
    let token = try TokenConnector(teamID: "DEF123GHIJ", keyID: "ABC123DEFG", key: .file(path: "AuthKey.p8"), environment: .production)
    let certificate = try CertificateConnector(pkcs12: .file(path: "aps.p12"), password: "pw", environment: .sandbox)
    let response = try await send(notification, via: token, to: device)
    _ = response.apnsID
    try await send(notification, via: certificate, to: device)
    try await send(BackgroundNotification(bundleID: "com.example.app"), via: certificate, to: device)
}
