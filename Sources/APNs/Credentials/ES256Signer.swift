internal import CCrypto

/// Signs with an EC P-256 private key (ES256), returning the raw r‖s signature JWTs use
/// (<doc:ProtocolReference#Token-authentication>).
///
/// Thread safety: `@unchecked Sendable` because the `EVP_PKEY` is never modified after loading and
/// each signature uses its own `EVP_MD_CTX`, which OpenSSL 3 allows from many threads at once.
final class ES256Signer: @unchecked Sendable {
    private let key: OpaquePointer

    /// Loads a PEM private key (the `.p8` file: PKCS#8, `-----BEGIN PRIVATE KEY-----`).
    init(pem: [UInt8]) throws(CredentialError) {
        guard let bio = OpenSSL.bio(pem) else { throw .invalidPrivateKey("out of memory") }
        defer { BIO_free(bio) }
        guard let key = ccrypto_read_private_key(bio, nil) else {
            let detail = OpenSSL.lastError()
            if pem.count > 0, String(decoding: pem, as: UTF8.self).contains("ENCRYPTED") { throw .passphraseRequired }
            throw .invalidPrivateKey(detail)
        }
        guard EVP_PKEY_is_a(key, "EC") == 1, EVP_PKEY_get_bits(key) == 256 else {
            let detail = "a \(EVP_PKEY_get_bits(key))-bit key"
            EVP_PKEY_free(key)
            throw .notAnES256Key(detail)
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// The 64-byte r‖s ECDSA signature of SHA-256(`message`).
    func sign(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw .signingFailed(OpenSSL.lastError())
        }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1
        else { throw .signingFailed(OpenSSL.lastError()) }
        var der = [UInt8](repeating: 0, count: length)
        let signed = der.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBufferPointer {
                EVP_DigestSign(context, out.baseAddress, &length, $0.baseAddress, $0.count)
            }
        }
        guard signed == 1 else { throw .signingFailed(OpenSSL.lastError()) }
        // DER SEQUENCE { r INTEGER, s INTEGER } → r‖s, each left-padded to 32 bytes.
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, length)
        }
        guard let signature = parsed else { throw .signingFailed(OpenSSL.lastError()) }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { out -> Bool in
            guard let base = out.baseAddress else { return false }
            return BN_bn2binpad(ECDSA_SIG_get0_r(signature), base, 32) == 32
                && BN_bn2binpad(ECDSA_SIG_get0_s(signature), base + 32, 32) == 32
        }
        guard ok else { throw .signingFailed("the signature does not fit P-256") }
        return raw
    }
}
