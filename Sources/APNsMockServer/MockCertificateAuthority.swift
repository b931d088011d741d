import APNs
import Foundation

/// A throwaway certificate authority for tests: it signs the mock server's TLS certificate and the
/// client certificates of certificate-connector tests, and makes `.p8` signing keys. Everything it
/// makes is generated in memory at run time and is clearly fake (`CN=swift-apns test …`).
///
/// ```swift
/// let authority = try MockCertificateAuthority()
/// let client = try authority.issueClientCertificate(bundleID: "com.example.app")
/// let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
/// ```
///
/// Thread safety: a value of strings; each call makes and frees its own OpenSSL objects.
public struct MockCertificateAuthority: Sendable {
    /// The CA certificate, PEM: give it to `TransportConfiguration.trustedCertificateAuthority`.
    public let certificatePEM: String
    /// The CA's private key, PKCS#8 PEM: it signs every certificate this authority issues.
    private let privateKeyPEM: String

    /// A certificate and its private key, both PEM.
    public struct IssuedCertificate: Sendable {
        public let certificatePEM: String
        /// Unencrypted PKCS#8 PEM.
        public let privateKeyPEM: String
    }

    /// A `.p8`-style signing key and the ids the server knows it by.
    public struct SigningKey: Sendable, Hashable {
        public let teamID: String
        public let keyID: String
        /// The private key as Apple issues it: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
        public let privateKeyPEM: String
        /// The public half, which the mock server verifies tokens with.
        public let publicKeyPEM: String

        /// A key made elsewhere; the server needs only `publicKeyPEM` to verify tokens.
        public init(teamID: String, keyID: String, privateKeyPEM: String, publicKeyPEM: String) {
            self.teamID = teamID
            self.keyID = keyID
            self.privateKeyPEM = privateKeyPEM
            self.publicKeyPEM = publicKeyPEM
        }
    }

    /// Creates a new CA with a fresh P-256 key, valid from an hour ago for a year.
    public init(name: String = "swift-apns test CA") throws {
        let key = try LibCrypto.Key.generateP256()
        let now = Date()
        certificatePEM = try LibCrypto.certificate(
            subject: [
                .init(oid: LibCrypto.NameAttribute.organizationNameOID, value: "swift-apns tests"),
                .init(oid: LibCrypto.NameAttribute.commonNameOID, value: name),
            ],
            publicKey: key, issuerPEM: nil, issuerKey: key, notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86400),
            extensions: [.basicConstraints("critical,CA:TRUE"), .keyUsage("critical,keyCertSign,cRLSign")])
        privateKeyPEM = try key.privatePEM()
    }

    /// A TLS server certificate for `127.0.0.1`, `::1` and `localhost`.
    public func issueServerCertificate() throws -> IssuedCertificate {
        try issue(
            subject: [
                .init(oid: LibCrypto.NameAttribute.organizationNameOID, value: "swift-apns tests"),
                .init(oid: LibCrypto.NameAttribute.commonNameOID, value: "swift-apns test server"),
            ],
            extensions: [
                .basicConstraints("critical,CA:FALSE"), .keyUsage("critical,digitalSignature"),
                .extendedKeyUsage("serverAuth"), .subjectAltName("DNS:localhost,IP:127.0.0.1,IP:::1"),
            ],
            notValidBefore: nil, notValidAfter: nil)
    }

    /// A client certificate shaped like Apple's push certificates: subject
    /// `UID=<bundleID>, CN=Apple Push Services: <bundleID>`, and when asked, Apple's environment
    /// extensions and topic list (`PushCertificate`, in `APNs`).
    ///
    /// ```swift
    /// let universal = try authority.issueClientCertificate(
    ///     bundleID: "com.example.app", environments: [.sandbox, .production],
    ///     topics: [.init("com.example.app", kinds: ["app"]), .init("com.example.app.voip", kinds: ["voip"])])
    /// let expired = try authority.issueClientCertificate(
    ///     bundleID: "com.example.app", notValidBefore: .now - 86400 * 400, notValidAfter: .now - 86400)
    /// ```
    /// - Parameters:
    ///   - bundleID: The app the certificate is for: its `UID`, common name and first topic.
    ///   - environments: Which of the sandbox and production extensions it carries (none by default,
    ///     as older certificates).
    ///   - topics: Its topic list (`1.2.840.113635.100.6.3.6`); nil for none, so that it covers the
    ///     `UID` only.
    ///   - notValidBefore: Default an hour ago.
    ///   - notValidAfter: Default 180 days from now.
    public func issueClientCertificate(
        bundleID: String, environments: Set<PushCertificate.Environment> = [], topics: [PushCertificate.Topic]? = nil,
        notValidBefore: Date? = nil, notValidAfter: Date? = nil
    ) throws -> IssuedCertificate {
        var extensions: [LibCrypto.Extension] = [
            .basicConstraints("critical,CA:FALSE"), .keyUsage("critical,digitalSignature"),
            .extendedKeyUsage("clientAuth"),
        ]
        for environment in environments.sorted() {
            let oid = environment == .sandbox ? PushCertificate.sandboxOID : PushCertificate.productionOID
            extensions.append(.raw(oid: oid, value: [0x05, 0x00]))  // DER NULL, as Apple's
        }
        if let topics {
            extensions.append(.raw(oid: PushCertificate.topicsOID, value: PushCertificate.extensionValue(for: topics)))
        }
        return try issue(
            subject: [
                .init(oid: PushCertificate.userIDOID, value: bundleID),
                .init(oid: LibCrypto.NameAttribute.commonNameOID, value: "Apple Push Services: \(bundleID)"),
                .init(oid: LibCrypto.NameAttribute.organizationNameOID, value: "swift-apns tests"),
            ],
            extensions: extensions, notValidBefore: notValidBefore, notValidAfter: notValidAfter)
    }

    private func issue(
        subject: [LibCrypto.NameAttribute], extensions: [LibCrypto.Extension], notValidBefore: Date?,
        notValidAfter: Date?
    ) throws -> IssuedCertificate {
        let key = try LibCrypto.Key.generateP256()
        let now = Date()
        let pem = try LibCrypto.certificate(
            subject: subject, publicKey: key, issuerPEM: certificatePEM,
            issuerKey: try LibCrypto.Key.readPrivate(pem: privateKeyPEM),
            notValidBefore: notValidBefore ?? now.addingTimeInterval(-3600),
            notValidAfter: notValidAfter ?? now.addingTimeInterval(180 * 86400), extensions: extensions)
        return IssuedCertificate(certificatePEM: pem, privateKeyPEM: try key.privatePEM())
    }

    /// A new P-256 signing key, as Apple's `.p8` files hold, with the ids to register it under.
    public static func makeSigningKey(teamID: String, keyID: String) -> SigningKey {
        // Generating and writing a P-256 key fails only when OpenSSL itself is broken (out of
        // memory, no EC support): nothing a caller passes can cause it.
        do {
            let key = try LibCrypto.Key.generateP256()
            return SigningKey(
                teamID: teamID, keyID: keyID, privateKeyPEM: try key.privatePEM(), publicKeyPEM: try key.publicPEM())
        } catch {
            preconditionFailure("OpenSSL could not make a P-256 key: \(error)")
        }
    }
}
