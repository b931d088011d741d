internal import CCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Small helpers over libcrypto. Every function here is thread-safe: it uses only its own objects.
/// The mock server's own libcrypto code (`APNsMockServer`) uses them too, hence `package`.
package enum OpenSSL {
    /// OpenSSL's initialisation, done before the library's first other OpenSSL call (loading a
    /// credential, or libcurl's global initialisation). It asks OpenSSL not to free its global
    /// state in an `atexit` handler: a program that exits while a connector's thread is still
    /// inside a TLS call (it dropped the connector without awaiting `shutdown`) would otherwise
    /// crash in that thread as the handler frees what the call is using.
    package static let initialized: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1

    /// The last libcrypto error as text, clearing the queue. OpenSSL's messages name algorithms
    /// and formats, never key material.
    package static func lastError() -> String {
        let code = ERR_peek_last_error()
        defer { ERR_clear_error() }
        guard code != 0 else { return "no detail from OpenSSL" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A read-only memory BIO over a copy of `bytes`; the caller frees it with `BIO_free`.
    package static func bio(_ bytes: [UInt8]) -> OpaquePointer? {
        _ = initialized
        let bio = BIO_new(BIO_s_mem())
        guard let bio else { return nil }
        let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(bytes.count) || bytes.isEmpty else {
            BIO_free(bio)
            return nil
        }
        return bio
    }

    /// Everything written into a memory BIO.
    package static func contents(of bio: OpaquePointer) -> [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = ccrypto_bio_get_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    /// Reads a credential's bytes.
    static func load(_ source: CredentialSource) throws(CredentialError) -> [UInt8] {
        switch source {
        case .pem(let text): return Array(text.utf8)
        case .bytes(let bytes): return bytes
        case .file(let path):
            let files = FileManager.default
            guard let data = files.contents(atPath: path) else {
                let reason =
                    !files.fileExists(atPath: path)
                    ? "no such file"
                    : !files.isReadableFile(atPath: path) ? "permission denied" : "not a regular file"
                throw .unreadableFile(path: path, reason: reason)
            }
            return Array(data)
        }
    }
}

/// Where a key or certificate comes from: PEM text, bytes (a file's contents), or a file path.
///
/// ```swift
/// let key = CredentialSource.file(path: "AuthKey_ABC123DEFG.p8")
/// let pem = CredentialSource.pem(ProcessInfo.processInfo.environment["APNS_KEY"] ?? "")
/// ```
public enum CredentialSource: Sendable, Hashable, CustomStringConvertible {
    /// PEM text.
    case pem(String)
    /// The file's bytes (PEM, DER or PKCS#12 as the initialiser expects).
    case bytes([UInt8])
    /// A path to read when the connector is made.
    case file(path: String)

    /// Never shows the credential itself.
    public var description: String {
        switch self {
        case .pem: return "PEM text (redacted)"
        case .bytes(let bytes): return "\(bytes.count) bytes (redacted)"
        case .file(let path): return "file \(path)"
        }
    }
}
