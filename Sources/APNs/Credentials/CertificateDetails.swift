internal import CCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// What a push certificate is good for, read before the first push: its subject and issuer, when
/// it is valid, the APNs environments and topics Apple issued it for, and so which push types it
/// can send (<doc:ProtocolReference#Certificate-authentication>, ``PushCertificate``).
///
/// ``CertificateConnector`` reads it when it is made (``CertificateConnector/certificate``): it
/// refuses an expired certificate or one for the other environment, logs a warning when it expires
/// within 30 days, and refuses before any I/O a push to a topic the certificate does not cover.
/// `apns inspect FILE` prints it.
///
/// ```swift
/// let details = try CertificateDetails(certificate: .file(path: "aps.pem"))
/// print(details.environments)     // [sandbox, production]: a universal certificate
/// print(details.coveredPushTypes.map(\.topic))
/// if details.covers(topic: "com.example.app.voip", pushType: .voip) { … }
/// ```
///
/// Thread safety: an immutable value. It holds no key material.
public struct CertificateDetails: Hashable, Sendable, CustomStringConvertible {
    /// How the certificate was stored.
    public enum Format: String, Hashable, Sendable, CustomStringConvertible {
        /// PEM text (`-----BEGIN CERTIFICATE-----`).
        case pem
        /// A DER `.cer` file, as the developer portal downloads it.
        case der
        /// A PKCS#12 bundle with current (AES) encryption.
        case pkcs12
        /// A PKCS#12 bundle encrypted with RC2-40, as older Keychain exports are; read through
        /// OpenSSL's legacy provider.
        case legacyPKCS12

        /// `PEM`, `DER`, `PKCS#12` or `PKCS#12 (legacy RC2-40)`.
        public var description: String {
            switch self {
            case .pem: return "PEM"
            case .der: return "DER"
            case .pkcs12: return "PKCS#12"
            case .legacyPKCS12: return "PKCS#12 (legacy RC2-40 encryption)"
            }
        }
    }

    /// How the certificate was stored.
    public let format: Format
    /// The subject (RFC 2253), e.g. `O=…,CN=Apple Push Services: com.example.app,UID=com.example.app`.
    public let subject: String
    /// The subject's `UID`: the bundle id of an app's push certificate, the topic of an MDM one.
    public let userID: String?
    /// The issuer (RFC 2253): Apple's Worldwide Developer Relations CA for a real certificate.
    public let issuer: String
    /// The serial number, uppercase hex.
    public let serialNumber: String
    /// SHA-256 of the certificate's DER bytes, uppercase hex pairs joined by `:`, as Keychain Access
    /// and `openssl x509 -fingerprint -sha256` show it.
    public let sha256Fingerprint: String
    /// The first moment it is valid.
    public let notValidBefore: Date
    /// The last moment it is valid.
    public let notValidAfter: Date
    /// The environments Apple's extensions name, sandbox first: both for a universal certificate,
    /// empty when the certificate names none (then any environment is tried).
    public let environments: [PushCertificate.Environment]
    /// The topics it covers: its topic list, or its subject's `UID` (with no kinds) when it has no
    /// list. Empty when it names neither; then no topic is refused before sending.
    public let topics: [PushCertificate.Topic]

    /// How long before expiry a certificate connector starts warning: 30 days.
    public static let expiryWarningPeriod: Duration = .seconds(30 * 86400)

    /// Reads a certificate: PEM text (the first certificate, when a chain or a key follows) or DER.
    /// - Throws: ``CredentialError/unreadableFile(path:reason:)`` or
    ///   ``CredentialError/invalidCertificate(_:)``.
    public init(certificate: CredentialSource) throws(CredentialError) {
        let bytes = try OpenSSL.load(certificate)
        guard let bio = OpenSSL.bio(bytes) else { throw .invalidCertificate("out of memory") }
        defer { BIO_free(bio) }
        let isPEM = String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN")
        let read: OpaquePointer? = isPEM ? PEM_read_bio_X509(bio, nil, nil, nil) : d2i_X509_bio(bio, nil)
        guard let leaf = read else {
            ERR_clear_error()
            throw .invalidCertificate(isPEM ? "no -----BEGIN CERTIFICATE----- block" : "neither PEM nor DER X.509")
        }
        defer { X509_free(leaf) }
        self = try CertificateDetails(leaf: leaf, format: isPEM ? .pem : .der)
    }

    /// Reads a PEM certificate and checks that `privateKey` (decrypted with `passphrase`) belongs
    /// to it, as ``CertificateConnector`` does.
    /// - Throws: ``CredentialError/passphraseRequired``, ``CredentialError/wrongPassphrase``,
    ///   ``CredentialError/keyDoesNotMatchCertificate``, …
    public init(
        certificate: CredentialSource, privateKey: CredentialSource, passphrase: String? = nil
    ) throws(CredentialError) {
        self = try ClientIdentity(
            certificatePEM: OpenSSL.load(certificate), privateKeyPEM: OpenSSL.load(privateKey), passphrase: passphrase
        ).details
    }

    /// Reads the certificate of a PKCS#12 bundle (`.p12`), which its password decrypts.
    /// - Throws: ``CredentialError/wrongPassphrase``, ``CredentialError/legacyPKCS12``,
    ///   ``CredentialError/invalidPKCS12(_:)``.
    public init(pkcs12: CredentialSource, password: String) throws(CredentialError) {
        self = try ClientIdentity(pkcs12: OpenSSL.load(pkcs12), password: password).details
    }

    /// Whether the certificate may send a push of `pushType` to `topic`
    /// (<doc:ProtocolReference#Certificate-authentication>). True when it names no topics at all.
    public func covers(topic: String, pushType: PushType) -> Bool {
        topics.isEmpty || PushCertificate.covers(topics, topic: topic, pushType: pushType)
    }

    /// The push types that accept certificate authentication and that this certificate covers,
    /// each with the topic it would send them to, in ``PushType/allCases`` order.
    public var coveredPushTypes: [(pushType: PushType, topic: String)] {
        PushType.allCases.compactMap { pushType in
            guard pushType.authentication.contains(.certificate),
                let topic = PushCertificate.coveredTopic(of: pushType, in: topics)
            else { return nil }
            return (pushType, topic)
        }
    }

    /// Whether it is valid at `date`, and if so whether it expires within `period` of it.
    public func validity(
        at date: Date = Date(), warningWithin period: Duration = CertificateDetails.expiryWarningPeriod
    ) -> Validity {
        if date < notValidBefore { return .notYetValid }
        if date > notValidAfter { return .expired }
        let remaining = notValidAfter.timeIntervalSince(date)
        return remaining <= Double(period.components.seconds) ? .expiresSoon(in: .seconds(remaining)) : .valid
    }

    /// Where a certificate stands at a moment.
    public enum Validity: Hashable, Sendable {
        /// Before its not-before date (a clock that is wrong, or a certificate issued for later).
        case notYetValid
        /// Valid, and not within the warning period of expiry.
        case valid
        /// Valid, but expiring within the warning period.
        case expiresSoon(in: Duration)
        /// After its not-after date: APNs refuses the TLS handshake.
        case expired
    }

    /// Throws when the certificate cannot be used at `date`.
    /// - Throws: ``CredentialError/certificateExpired(subject:notValidAfter:)`` or
    ///   ``CredentialError/certificateNotYetValid(subject:notValidBefore:)``.
    public func checkValidity(at date: Date = Date()) throws(CredentialError) {
        switch validity(at: date) {
        case .expired: throw .certificateExpired(subject: subject, notValidAfter: notValidAfter)
        case .notYetValid: throw .certificateNotYetValid(subject: subject, notValidBefore: notValidBefore)
        case .valid, .expiresSoon: return
        }
    }

    /// Throws when the certificate does not cover `topic` for `pushType`.
    /// - Throws: ``CredentialError/topicNotCovered(topic:pushType:covered:)``, naming the topics it
    ///   does cover.
    public func checkCovers(topic: String, pushType: PushType) throws(CredentialError) {
        guard covers(topic: topic, pushType: pushType) else {
            throw .topicNotCovered(topic: topic, pushType: pushType, covered: topics.map(\.description))
        }
    }

    /// Refuses, before any I/O, a request this certificate cannot carry at `now`: it has expired
    /// since the connector was made, or it does not cover the request's topic for its push type.
    func checkCovers(_ request: APNsRequest, at now: Date) throws(CredentialError) {
        if now > notValidAfter {
            throw .certificateExpired(subject: subject, notValidAfter: notValidAfter)
        }
        guard request.service == .device, !topics.isEmpty, let topic = request[header: .apnsTopic] else { return }
        let pushType = request[header: .apnsPushType].flatMap(PushType.init(rawValue:)) ?? .alert
        try checkCovers(topic: topic, pushType: pushType)
    }

    /// Subject, validity, environments and topics on one line; never key material.
    public var description: String {
        let environmentList = environments.isEmpty ? "unspecified" : environments.map(\.rawValue).joined(separator: "+")
        return "CertificateDetails(subject: \(subject), notValidAfter: \(notValidAfter.formatted(.iso8601)), "
            + "environments: \(environmentList), topics: [\(topics.map(\.description).joined(separator: ", "))])"
    }

    /// Reads everything from a parsed leaf certificate.
    init(leaf: OpaquePointer, format: Format) throws(CredentialError) {
        self.format = format
        subject = CertificateDetails.nameText(X509_get_subject_name(leaf))
        issuer = CertificateDetails.nameText(X509_get_issuer_name(leaf))
        userID = CertificateDetails.userID(of: leaf)
        serialNumber =
            X509_get0_serialNumber(leaf).map { CertificateDetails.hex(CertificateDetails.bytes(of: $0)) } ?? ""
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        if X509_digest(leaf, EVP_sha256(), &digest, &length) == 1 {
            sha256Fingerprint = digest.prefix(Int(length)).map { CertificateDetails.hex([$0]) }.joined(separator: ":")
        } else {
            ERR_clear_error()
            sha256Fingerprint = ""
        }
        guard let notBefore = CertificateDetails.date(X509_get0_notBefore(leaf)),
            let notAfter = CertificateDetails.date(X509_get0_notAfter(leaf))
        else { throw .invalidCertificate("its validity dates cannot be read") }
        notValidBefore = notBefore
        notValidAfter = notAfter
        environments = PushCertificate.Environment.allCases.filter { environment in
            CertificateDetails.extensionValue(
                of: leaf, oid: environment == .sandbox ? PushCertificate.sandboxOID : PushCertificate.productionOID)
                != nil
        }
        var listed: [PushCertificate.Topic]?
        do throws(PushCertificate.MalformedExtension) {
            for (oid, kind) in [(PushCertificate.topicsOID, nil), (PushCertificate.voipTopicsOID, "voip")] {
                guard let value = CertificateDetails.extensionValue(of: leaf, oid: oid) else { continue }
                let topics = try PushCertificate.topics(fromExtensionValue: value)
                listed =
                    (listed ?? [])
                    + topics.map {
                        kind != nil && $0.kinds.isEmpty ? PushCertificate.Topic($0.name, kinds: [kind ?? ""]) : $0
                    }
            }
        } catch {
            throw .invalidCertificate(error.description)
        }
        topics = listed ?? userID.map { [PushCertificate.Topic($0, kinds: [])] } ?? []
    }

    private static func nameText(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, ccrypto_xn_flag_rfc2253())
        return String(decoding: OpenSSL.contents(of: bio), as: UTF8.self)
    }

    private static func userID(of certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_userId, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        return String(decoding: bytes(of: data), as: UTF8.self)
    }

    /// The contents of the extension `oid`, or nil when the certificate has none.
    private static func extensionValue(of certificate: OpaquePointer, oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(certificate, object, -1)
        guard index >= 0, let found = X509_get_ext(certificate, index), let data = X509_EXTENSION_get_data(found) else {
            return nil
        }
        return bytes(of: data)
    }

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let count = Int(ASN1_STRING_length(string))
        guard count > 0, let start = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: start, count: count))
    }

    private static func bytes(of string: UnsafeMutablePointer<ASN1_STRING>) -> [UInt8] {
        bytes(of: UnsafePointer(string))
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            ERR_clear_error()
            return nil
        }
        return Date(timeIntervalSince1970: Double(timegm(&parts)))
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
