import APNs
internal import CCrypto

/// Converts test credentials into the other forms Apple's tools produce, so certificate
/// connectors can be tested with every input they accept. For tests only: keys are handled in
/// memory and nothing is written to disk.
///
/// ```swift
/// let encrypted = try TestCredentials.encryptPrivateKey(pem: client.privateKeyPEM, passphrase: "s3cret")
/// let p12 = try TestCredentials.pkcs12(certificatePEM: client.certificatePEM, privateKeyPEM: client.privateKeyPEM, password: "s3cret")
/// ```
public enum TestCredentials {
    /// A failure inside libcrypto while converting.
    public struct ConversionError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The key as encrypted PKCS#8 PEM (`-----BEGIN ENCRYPTED PRIVATE KEY-----`, AES-256-CBC).
    public static func encryptPrivateKey(pem: String, passphrase: String) throws -> String {
        let key = try readKey(pem)
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { throw ConversionError(description: "out of memory") }
        defer { BIO_free(bio) }
        let written = passphrase.withCString { pass in
            PEM_write_bio_PKCS8PrivateKey(bio, key, EVP_aes_256_cbc(), pass, Int32(passphrase.utf8.count), nil, nil)
        }
        guard written == 1 else { throw ConversionError(description: "encrypting the key failed") }
        return String(decoding: contents(of: bio), as: UTF8.self)
    }

    /// A PKCS#12 bundle of the certificate and key, protected by `password` with OpenSSL 3's
    /// default (AES-256, PBKDF2) encryption.
    public static func pkcs12(certificatePEM: String, privateKeyPEM: String, password: String) throws -> [UInt8] {
        try pkcs12(
            certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM, password: password, certificateCipher: 0,
            keyCipher: 0)
    }

    private static func pkcs12(
        certificatePEM: String, privateKeyPEM: String, password: String, certificateCipher: Int32, keyCipher: Int32
    ) throws -> [UInt8] {
        let key = try readKey(privateKeyPEM)
        defer { EVP_PKEY_free(key) }
        guard let certificateBIO = BIO_new(BIO_s_mem()) else { throw ConversionError(description: "out of memory") }
        defer { BIO_free(certificateBIO) }
        _ = Array(certificatePEM.utf8).withUnsafeBytes { BIO_write(certificateBIO, $0.baseAddress, Int32($0.count)) }
        guard let certificate = PEM_read_bio_X509(certificateBIO, nil, nil, nil) else {
            throw ConversionError(description: "not a PEM certificate")
        }
        defer { X509_free(certificate) }
        let bundle = password.withCString {
            PKCS12_create($0, "swift-apns test", key, certificate, nil, keyCipher, certificateCipher, 0, 0, 0)
        }
        guard let bundle else { throw ConversionError(description: "PKCS12_create failed") }
        defer { PKCS12_free(bundle) }
        guard let out = BIO_new(BIO_s_mem()) else { throw ConversionError(description: "out of memory") }
        defer { BIO_free(out) }
        guard i2d_PKCS12_bio(out, bundle) == 1 else { throw ConversionError(description: "encoding PKCS#12 failed") }
        return contents(of: out)
    }

    /// A PKCS#12 bundle encrypted the way older Keychain exports are: RC2-40 for the certificate,
    /// 3DES for the key, SHA-1 MAC. Creating one needs OpenSSL 3's legacy provider, which this
    /// loads into the process.
    public static func legacyPKCS12(certificatePEM: String, privateKeyPEM: String, password: String) throws -> [UInt8] {
        guard OSSL_PROVIDER_try_load(nil, "legacy", 1) != nil else {
            throw ConversionError(description: "OpenSSL's legacy provider is not installed")
        }
        return try pkcs12(
            certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM, password: password,
            certificateCipher: NID_pbe_WithSHA1And40BitRC2_CBC, keyCipher: NID_pbe_WithSHA1And3_Key_TripleDES_CBC)
    }

    private static func readKey(_ pem: String) throws -> OpaquePointer {
        guard let bio = BIO_new(BIO_s_mem()) else { throw ConversionError(description: "out of memory") }
        defer { BIO_free(bio) }
        _ = Array(pem.utf8).withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
        guard let key = ccrypto_read_private_key(bio, nil) else {
            throw ConversionError(description: "not an unencrypted PEM private key")
        }
        return key
    }

    private static func contents(of bio: OpaquePointer) -> [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = ccrypto_bio_get_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }
}
