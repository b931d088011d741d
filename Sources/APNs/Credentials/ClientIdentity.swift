internal import CCrypto

/// A TLS client certificate with its private key, checked and normalised to unencrypted PEM for
/// libcurl (which receives them as in-memory blobs, never as files).
///
/// Thread safety: an immutable value.
struct ClientIdentity: Sendable {
    /// The leaf certificate followed by any chain certificates, PEM.
    let certificateChainPEM: [UInt8]
    /// The private key, unencrypted PKCS#8 PEM. Secret: never printed.
    let privateKeyPEM: [UInt8]
    /// What the leaf certificate is good for: subject, validity, environments, topics.
    let details: CertificateDetails

    /// A PEM certificate (optionally followed by its chain) and a PEM private key, optionally
    /// encrypted with `passphrase`.
    init(certificatePEM: [UInt8], privateKeyPEM: [UInt8], passphrase: String?) throws(CredentialError) {
        let certificates = try ClientIdentity.readCertificates(certificatePEM)
        defer { certificates.forEach { X509_free($0) } }
        guard let bio = OpenSSL.bio(privateKeyPEM) else { throw .invalidPrivateKey("out of memory") }
        defer { BIO_free(bio) }
        let loaded: OpaquePointer? = {
            guard let passphrase else { return ccrypto_read_private_key(bio, nil) }
            return passphrase.withCString { ccrypto_read_private_key(bio, $0) }
        }()
        guard let key = loaded else {
            let detail = OpenSSL.lastError()
            if String(decoding: privateKeyPEM, as: UTF8.self).contains("ENCRYPTED") {
                throw passphrase == nil ? .passphraseRequired : .wrongPassphrase
            }
            throw .invalidPrivateKey(detail)
        }
        defer { EVP_PKEY_free(key) }
        self = try ClientIdentity.make(
            leaf: certificates[0], chain: Array(certificates.dropFirst()), key: key, format: .pem)
    }

    /// A PKCS#12 bundle (`.p12`) and its password. A bundle encrypted with RC2-40 is read through
    /// OpenSSL's legacy provider when it is installed; otherwise ``CredentialError/legacyPKCS12``
    /// says how to re-export it.
    init(pkcs12 bytes: [UInt8], password: String) throws(CredentialError) {
        var attempt = try ClientIdentity.parsePKCS12(bytes, password: password, format: .pkcs12)
        if case .unsupportedCipher = attempt {
            // Older Keychain exports use RC2-40; OpenSSL 3 keeps it in the legacy provider.
            // `retain_fallbacks = 1` keeps the default provider available alongside it.
            if OSSL_PROVIDER_try_load(nil, "legacy", 1) != nil {
                attempt = try ClientIdentity.parsePKCS12(bytes, password: password, format: .legacyPKCS12)
            }
        }
        switch attempt {
        case .parsed(let identity): self = identity
        case .unsupportedCipher: throw .legacyPKCS12
        }
    }

    private enum PKCS12Attempt {
        case parsed(ClientIdentity)
        case unsupportedCipher
    }

    private static func parsePKCS12(
        _ bytes: [UInt8], password: String, format: CertificateDetails.Format
    ) throws(CredentialError) -> PKCS12Attempt {
        guard let bio = OpenSSL.bio(bytes) else { throw .invalidPKCS12("out of memory") }
        defer { BIO_free(bio) }
        guard let p12 = d2i_PKCS12_bio(bio, nil) else { throw .invalidPKCS12(OpenSSL.lastError()) }
        defer { PKCS12_free(p12) }
        guard password.withCString({ PKCS12_verify_mac(p12, $0, -1) }) == 1 else {
            ERR_clear_error()
            throw .wrongPassphrase
        }
        var key: OpaquePointer?
        var leaf: OpaquePointer?
        var chain: OpaquePointer?
        let parsed = password.withCString { PKCS12_parse(p12, $0, &key, &leaf, &chain) }
        defer {
            if let key { EVP_PKEY_free(key) }
            if let leaf { X509_free(leaf) }
            if let chain { ccrypto_sk_x509_pop_free(chain) }
        }
        guard parsed == 1 else {
            let detail = OpenSSL.lastError()
            if detail.contains("unsupported") || detail.contains("RC2") { return .unsupportedCipher }
            throw .invalidPKCS12(detail)
        }
        guard let key, let leaf else { throw .invalidPKCS12("it holds no certificate with a private key") }
        var chainCertificates: [OpaquePointer] = []
        if let chain {
            for index in 0..<ccrypto_sk_x509_num(chain) {
                if let certificate = ccrypto_sk_x509_value(chain, index) { chainCertificates.append(certificate) }
            }
        }
        return .parsed(try make(leaf: leaf, chain: chainCertificates, key: key, format: format))
    }

    private init(certificateChainPEM: [UInt8], privateKeyPEM: [UInt8], details: CertificateDetails) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
        self.details = details
    }

    private static func make(
        leaf: OpaquePointer, chain: [OpaquePointer], key: OpaquePointer, format: CertificateDetails.Format
    ) throws(CredentialError) -> ClientIdentity {
        guard X509_check_private_key(leaf, key) == 1 else {
            ERR_clear_error()
            throw .keyDoesNotMatchCertificate
        }
        guard let certificateBIO = BIO_new(BIO_s_mem()), let keyBIO = BIO_new(BIO_s_mem()) else {
            throw .invalidCertificate("out of memory")
        }
        defer {
            BIO_free(certificateBIO)
            BIO_free(keyBIO)
        }
        for certificate in [leaf] + chain {
            guard PEM_write_bio_X509(certificateBIO, certificate) == 1 else {
                throw .invalidCertificate(OpenSSL.lastError())
            }
        }
        guard PEM_write_bio_PrivateKey(keyBIO, key, nil, nil, 0, nil, nil) == 1 else {
            throw .invalidPrivateKey(OpenSSL.lastError())
        }
        return ClientIdentity(
            certificateChainPEM: OpenSSL.contents(of: certificateBIO),
            privateKeyPEM: OpenSSL.contents(of: keyBIO),
            details: try CertificateDetails(leaf: leaf, format: format))
    }

    private static func readCertificates(_ pem: [UInt8]) throws(CredentialError) -> [OpaquePointer] {
        guard let bio = OpenSSL.bio(pem) else { throw .invalidCertificate("out of memory") }
        defer { BIO_free(bio) }
        var certificates: [OpaquePointer] = []
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { certificates.append(certificate) }
        ERR_clear_error()  // the end of the data reads as an error
        guard !certificates.isEmpty else { throw .invalidCertificate("no -----BEGIN CERTIFICATE----- block") }
        return certificates
    }
}
