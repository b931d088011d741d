import APNs
import Crypto
import Foundation
import SwiftASN1
import X509

/// A throwaway certificate authority for tests: it signs the mock server's TLS certificate and the
/// client certificates of certificate-connector tests, and makes `.p8` signing keys. Everything it
/// makes is generated in memory at run time and is clearly fake (`CN=swift-apns test …`).
///
/// ```swift
/// let authority = try MockCertificateAuthority()
/// let client = try authority.issueClientCertificate(bundleID: "com.example.app")
/// let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
/// ```
public struct MockCertificateAuthority: Sendable {
    /// The CA certificate, PEM: give it to `TransportConfiguration.trustedCertificateAuthority`.
    public let certificatePEM: String
    private let certificate: Certificate
    private let privateKey: P256.Signing.PrivateKey

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
        privateKey = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            OrganizationName("swift-apns tests")
            CommonName(name)
        }
        let now = Date()
        certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(privateKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86400),
            issuer: subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(privateKey))
        certificatePEM = try certificate.serializeAsPEM().pemString
    }

    /// A TLS server certificate for `127.0.0.1`, `::1` and `localhost`.
    public func issueServerCertificate() throws -> IssuedCertificate {
        try issue(
            commonName: "swift-apns test server",
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
                ])
            })
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
        let nullValue: ArraySlice<UInt8> = [0x05, 0x00]
        var apple: [Certificate.Extension] = []
        for environment in environments.sorted() {
            let oid = environment == .sandbox ? PushCertificate.sandboxOID : PushCertificate.productionOID
            apple.append(
                Certificate.Extension(
                    oid: try ASN1ObjectIdentifier(dotRepresentation: oid), critical: false, value: nullValue))
        }
        if let topics {
            apple.append(
                Certificate.Extension(
                    oid: try ASN1ObjectIdentifier(dotRepresentation: PushCertificate.topicsOID), critical: false,
                    value: ArraySlice(PushCertificate.extensionValue(for: topics))))
        }
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.clientAuth])
        }
        for item in apple { try extensions.append(item) }
        let subject = DistinguishedName([
            RelativeDistinguishedName(
                .init(
                    type: try ASN1ObjectIdentifier(dotRepresentation: PushCertificate.userIDOID), utf8String: bundleID)),
            RelativeDistinguishedName(
                .init(type: .RDNAttributeType.commonName, utf8String: "Apple Push Services: \(bundleID)")),
            RelativeDistinguishedName(.init(type: .RDNAttributeType.organizationName, utf8String: "swift-apns tests")),
        ])
        return try issue(
            subject: subject, extensions: extensions, notValidBefore: notValidBefore, notValidAfter: notValidAfter)
    }

    private func issue(commonName: String, extensions: Certificate.Extensions) throws -> IssuedCertificate {
        try issue(
            subject: try DistinguishedName {
                OrganizationName("swift-apns tests")
                CommonName(commonName)
            },
            extensions: extensions, notValidBefore: nil, notValidAfter: nil)
    }

    private func issue(
        subject: DistinguishedName, extensions: Certificate.Extensions, notValidBefore: Date?, notValidAfter: Date?
    ) throws -> IssuedCertificate {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let issued = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: notValidBefore ?? now.addingTimeInterval(-3600),
            notValidAfter: notValidAfter ?? now.addingTimeInterval(180 * 86400),
            issuer: certificate.subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(privateKey))
        return IssuedCertificate(
            certificatePEM: try issued.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }

    /// A new P-256 signing key, as Apple's `.p8` files hold, with the ids to register it under.
    public static func makeSigningKey(teamID: String, keyID: String) -> SigningKey {
        let key = P256.Signing.PrivateKey()
        return SigningKey(
            teamID: teamID, keyID: keyID, privateKeyPEM: key.pemRepresentation,
            publicKeyPEM: key.publicKey.pemRepresentation)
    }
}
