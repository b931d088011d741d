/// What a `.p8` token signing key is, read before the first push: that it is the EC P-256 key
/// ES256 needs, and the key id its file name carries (`AuthKey_<KEYID>.p8`). `apns inspect` prints
/// it with the JWT header and claims a ``TokenConnector`` would send (never a signature).
///
/// ```swift
/// let key = try SigningKeyDetails(key: .file(path: "AuthKey_ABC123DEFG.p8"))
/// print(key.keyID ?? "no id in the name")    // ABC123DEFG
/// print(ProviderTokenRules.header(keyID: key.keyID ?? "…"))
/// ```
///
/// Thread safety: an immutable value. It holds no key material.
public struct SigningKeyDetails: Hashable, Sendable, CustomStringConvertible {
    /// The key's curve: always `P-256`, since any other key is refused.
    public let curve: String
    /// The key id from a file named `AuthKey_<KEYID>.p8`; nil for another name, PEM text or bytes.
    public let keyID: String?

    /// Reads and checks a `.p8` key.
    /// - Throws: ``CredentialError/notAnES256Key(_:)``, ``CredentialError/invalidPrivateKey(_:)``,
    ///   ``CredentialError/passphraseRequired``, …
    public init(key: CredentialSource) throws(CredentialError) {
        _ = try ES256Signer(pem: OpenSSL.load(key))
        curve = "P-256"
        if case .file(let path) = key { keyID = SigningKeyDetails.keyID(fromFileName: path) } else { keyID = nil }
    }

    /// The key id in a path ending `AuthKey_<KEYID>.p8`, when it is 10 letters and digits.
    public static func keyID(fromFileName path: String) -> String? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let id = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
        return ProviderTokenRules.isAppleID(id) ? id : nil
    }

    /// `SigningKeyDetails(curve: P-256, keyID: …)`; never key material.
    public var description: String { "SigningKeyDetails(curve: \(curve), keyID: \(keyID ?? "unknown"))" }
}
