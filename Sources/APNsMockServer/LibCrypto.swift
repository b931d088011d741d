import APNs
internal import CCrypto
import Foundation

/// The few libcrypto operations the mock server needs: P-256 keys, X.509 certificates made and
/// read, and ES256 verification. They use the system's OpenSSL, as the library does, rather than
/// a package with a copy of its own (swift-crypto and swift-certificates would add BoringSSL to
/// every build of this package). What keeps the mock independent of the client is that each check
/// is written here again, not shared: the JWS signature's r‖s to DER conversion, the subject's
/// common name, the topic extension's lookup.
///
/// The plumbing (initialisation, memory BIOs, OpenSSL's error text) is the library's `OpenSSL`.
/// Every object here is made, used and freed by one caller; nothing is shared between threads
/// except ``LibCrypto/PublicKey``, whose `EVP_PKEY` is never modified after it is read.
enum LibCrypto {
    struct Failure: Error, CustomStringConvertible {
        let description: String

        /// What failed, with OpenSSL's last error (its messages name algorithms and formats,
        /// never key material).
        init(_ what: String) { description = "\(what): \(OpenSSL.lastError())" }
    }

    /// An `EVP_PKEY` that frees itself; used by one caller at a time.
    final class Key {
        let pointer: OpaquePointer

        init(owning pointer: OpaquePointer) { self.pointer = pointer }
        deinit { EVP_PKEY_free(pointer) }

        /// A new P-256 key.
        static func generateP256() throws(Failure) -> Key {
            _ = OpenSSL.initialized
            guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw Failure("EVP_PKEY_CTX_new_id") }
            defer { EVP_PKEY_CTX_free(context) }
            var key: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1,
                EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
                EVP_PKEY_keygen(context, &key) == 1, let key
            else { throw Failure("generating a P-256 key") }
            return Key(owning: key)
        }

        /// A private key from unencrypted PEM.
        static func readPrivate(pem: String) throws(Failure) -> Key {
            let bio = try LibCrypto.bio(Array(pem.utf8))
            defer { BIO_free(bio) }
            guard let key = ccrypto_read_private_key(bio, nil) else { throw Failure("reading a private key") }
            return Key(owning: key)
        }

        /// Unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as Apple's `.p8` files hold.
        func privatePEM() throws(Failure) -> String {
            try LibCrypto.pem { bio in PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil) }
        }

        /// The public half as PEM (`-----BEGIN PUBLIC KEY-----`).
        func publicPEM() throws(Failure) -> String {
            try LibCrypto.pem { bio in PEM_write_bio_PUBKEY(bio, pointer) }
        }
    }

    /// A P-256 public key that verifies ES256 signatures.
    ///
    /// Thread safety: `@unchecked Sendable` because the `EVP_PKEY` is never modified after it is
    /// read and each verification uses its own `EVP_MD_CTX`, which OpenSSL 3 allows from many
    /// threads at once.
    final class PublicKey: @unchecked Sendable {
        private let pointer: OpaquePointer

        init(pem: String) throws(Failure) {
            let bio = try LibCrypto.bio(Array(pem.utf8))
            defer { BIO_free(bio) }
            guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else { throw Failure("reading a public key") }
            guard EVP_PKEY_is_a(key, "EC") == 1, EVP_PKEY_get_bits(key) == 256 else {
                EVP_PKEY_free(key)
                throw Failure("the public key is not a P-256 key")
            }
            pointer = key
        }

        deinit { EVP_PKEY_free(pointer) }

        /// Whether `signature`, JWS's 64 bytes r‖s, is this key's ECDSA signature of
        /// SHA-256(`message`).
        func isValidES256Signature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            defer { ERR_clear_error() }
            guard signature.count == 64, let der = LibCrypto.derSignature(raw: signature),
                let context = EVP_MD_CTX_new()
            else { return false }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pointer) == 1 else { return false }
            return der.withUnsafeBufferPointer { signed in
                message.withUnsafeBufferPointer { text in
                    EVP_DigestVerify(context, signed.baseAddress, signed.count, text.baseAddress, text.count) == 1
                }
            }
        }
    }

    /// The DER `ECDSA-Sig-Value` for a JWS r‖s signature.
    static func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw[0..<32].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw[32..<64].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else { return nil }
        defer { CRYPTO_free(out, "", 0) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// One attribute of a distinguished name, by dotted OID, UTF-8.
    struct NameAttribute {
        static let commonNameOID = "2.5.4.3"
        static let organizationNameOID = "2.5.4.10"

        let oid: String
        let value: String
    }

    /// An extension to put in a certificate: either OpenSSL's configuration text for a standard
    /// one (`basicConstraints`: `critical,CA:TRUE`), or a raw DER value under a dotted OID.
    enum Extension {
        case standard(nid: Int32, text: String)
        case raw(oid: String, value: [UInt8])

        static func basicConstraints(_ text: String) -> Extension { .standard(nid: NID_basic_constraints, text: text) }
        static func keyUsage(_ text: String) -> Extension { .standard(nid: NID_key_usage, text: text) }
        static func extendedKeyUsage(_ text: String) -> Extension { .standard(nid: NID_ext_key_usage, text: text) }
        static func subjectAltName(_ text: String) -> Extension { .standard(nid: NID_subject_alt_name, text: text) }
    }

    /// A version 3 certificate for `publicKey`, signed with ECDSA-SHA256 by `issuerKey`, as PEM.
    /// `issuerPEM` is nil for a self-signed certificate (whose issuer is its subject).
    static func certificate(
        subject: [NameAttribute], publicKey: Key, issuerPEM: String?, issuerKey: Key, notValidBefore: Date,
        notValidAfter: Date, extensions: [Extension]
    ) throws(Failure) -> String {
        _ = OpenSSL.initialized
        guard let certificate = X509_new() else { throw Failure("X509_new") }
        defer { X509_free(certificate) }
        let issuer: OpaquePointer? = try issuerPEM.map { (pem: String) throws(Failure) -> OpaquePointer in
            try read(certificatePEM: pem)
        }
        defer { if let issuer { X509_free(issuer) } }
        guard X509_set_version(certificate, 2) == 1 else { throw Failure("X509_set_version") }
        try setRandomSerialNumber(certificate)
        guard ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notValidBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notValidAfter.timeIntervalSince1970)) != nil
        else { throw Failure("setting the validity") }
        guard let name = X509_NAME_new() else { throw Failure("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        for attribute in subject {
            guard let object = OBJ_txt2obj(attribute.oid, 1) else { throw Failure("the OID \(attribute.oid)") }
            defer { ASN1_OBJECT_free(object) }
            // A UTF8String as given: OpenSSL's MBSTRING_UTF8 would hold the common name to X.520's
            // 64 characters, and Apple's "Apple Push Services: <bundle id>" can be longer.
            let bytes = Array(attribute.value.utf8)
            guard
                X509_NAME_add_entry_by_OBJ(name, object, V_ASN1_UTF8STRING, bytes, Int32(bytes.count), -1, 0) == 1
            else { throw Failure("the name attribute \(attribute.oid)") }
        }
        guard X509_set_subject_name(certificate, name) == 1,
            X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0) } ?? name) == 1,
            X509_set_pubkey(certificate, publicKey.pointer) == 1
        else { throw Failure("setting the names and key") }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer ?? certificate, certificate, nil, nil, 0)
        for item in extensions {
            let made: OpaquePointer?
            switch item {
            case .standard(let nid, let text):
                made = X509V3_EXT_conf_nid(nil, &context, nid, text)
            case .raw(let oid, let value):
                made = try rawExtension(oid: oid, value: value)
            }
            guard let made else { throw Failure("the extension \(item)") }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else { throw Failure("adding the extension \(item)") }
        }
        guard X509_sign(certificate, issuerKey.pointer, EVP_sha256()) > 0 else { throw Failure("signing") }
        return try pem { bio in PEM_write_bio_X509(bio, certificate) }
    }

    /// The parts of a client certificate the mock server judges a connection by.
    struct ClientCertificate {
        /// The subject's common name (the last one, if there are several).
        let commonName: String?
        /// The contents of the extension `topicsOID`, or nil when there is none.
        let topicsExtension: [UInt8]?
        /// Which of the `markerOIDs` asked about the certificate carries as extensions.
        let markers: Set<String>
    }

    /// Reads a DER certificate; nil when it is not one.
    static func clientCertificate(der: [UInt8], topicsOID: String, markerOIDs: [String] = []) -> ClientCertificate? {
        _ = OpenSSL.initialized
        defer { ERR_clear_error() }
        let read: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let certificate = read else { return nil }
        defer { X509_free(certificate) }
        var commonName: String?
        if let name = X509_get_subject_name(certificate) {
            var index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
            while index >= 0 {
                if let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) {
                    commonName = utf8(data)
                }
                index = X509_NAME_get_index_by_NID(name, NID_commonName, index)
            }
        }
        var topics: [UInt8]?
        if let object = OBJ_txt2obj(topicsOID, 1) {
            defer { ASN1_OBJECT_free(object) }
            let index = X509_get_ext_by_OBJ(certificate, object, -1)
            if index >= 0, let found = X509_get_ext(certificate, index), let data = X509_EXTENSION_get_data(found) {
                topics = bytes(of: UnsafePointer(data))
            }
        }
        var markers: Set<String> = []
        for oid in markerOIDs {
            guard let object = OBJ_txt2obj(oid, 1) else { continue }
            defer { ASN1_OBJECT_free(object) }
            if X509_get_ext_by_OBJ(certificate, object, -1) >= 0 { markers.insert(oid) }
        }
        return ClientCertificate(commonName: commonName, topicsExtension: topics, markers: markers)
    }

    // MARK: - Helpers

    private static func rawExtension(oid: String, value: [UInt8]) throws(Failure) -> OpaquePointer? {
        guard let object = OBJ_txt2obj(oid, 1) else { throw Failure("the OID \(oid)") }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw Failure("ASN1_OCTET_STRING_new") }
        defer { ASN1_OCTET_STRING_free(octets) }
        guard ASN1_OCTET_STRING_set(octets, value, Int32(value.count)) == 1 else {
            throw Failure("ASN1_OCTET_STRING_set")
        }
        return X509_EXTENSION_create_by_OBJ(nil, object, 0, octets)
    }

    private static func setRandomSerialNumber(_ certificate: OpaquePointer) throws(Failure) {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        bytes[0] = (bytes[0] & 0x7F) | 0x40  // positive, and 16 bytes long
        guard let number = bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 16, nil) }) else {
            throw Failure("BN_bin2bn")
        }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil else {
            throw Failure("setting the serial number")
        }
    }

    private static func read(certificatePEM pem: String) throws(Failure) -> OpaquePointer {
        let bio = try bio(Array(pem.utf8))
        defer { BIO_free(bio) }
        guard let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else { throw Failure("reading a certificate") }
        return certificate
    }

    private static func bio(_ bytes: [UInt8]) throws(Failure) -> OpaquePointer {
        guard let bio = OpenSSL.bio(bytes) else { throw Failure("a memory BIO") }
        return bio
    }

    /// What `write` puts into a new memory BIO, as text.
    private static func pem(_ write: (OpaquePointer) -> Int32) throws(Failure) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw Failure("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw Failure("writing PEM") }
        let text = OpenSSL.contents(of: bio)
        guard !text.isEmpty else { throw Failure("writing PEM") }
        return String(decoding: text, as: UTF8.self)
    }

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let count = Int(ASN1_STRING_length(string))
        guard count > 0, let start = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: start, count: count))
    }

    private static func utf8(_ string: UnsafeMutablePointer<ASN1_STRING>) -> String? {
        var out: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&out, string)
        guard length >= 0, let out else { return nil }
        defer { CRYPTO_free(out, "", 0) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }
}
