import APNs
import Foundation

/// Verifies provider tokens the way APNs does (protocol reference, Token authentication): libcrypto's
/// ECDSA verification behind this type's own reading of the JWS (its base64url, header, claims and
/// r‖s signature), written apart from the client's signer.
struct TokenVerifier: Sendable {
    struct Registered: Sendable {
        let teamID: String
        let key: LibCrypto.PublicKey
    }

    typealias Outcome = TokenCheck

    let keys: [String: Registered]

    init(keys: [MockCertificateAuthority.SigningKey]) throws {
        var registered: [String: Registered] = [:]
        for key in keys {
            registered[key.keyID] = Registered(
                teamID: key.teamID, key: try LibCrypto.PublicKey(pem: key.publicKeyPEM))
        }
        self.keys = registered
    }

    /// Checks `authorization` (`bearer <jwt>`): format, algorithm, known key id, issuer, signature
    /// and age against `now`.
    func verify(authorization: String, now: Int) -> Outcome {
        let prefix = "bearer "
        guard authorization.lowercased().hasPrefix(prefix) else { return .rejected(.invalidProviderToken) }
        let parts = authorization.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = TokenVerifier.base64URLDecode(parts[0]),
            let claimsBytes = TokenVerifier.base64URLDecode(parts[1]),
            let signatureBytes = TokenVerifier.base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsBytes) as? [String: Any]
        else { return .rejected(.invalidProviderToken) }
        guard header["alg"] as? String == "ES256", let keyID = header["kid"] as? String else {
            return .rejected(.invalidProviderToken)
        }
        guard let registered = keys[keyID] else { return .rejected(.invalidProviderToken) }
        guard let issuer = claims["iss"] as? String, issuer == registered.teamID else {
            return .rejected(.invalidProviderToken)
        }
        guard let issuedAt = TokenVerifier.issuedAt(claims["iat"]) else { return .rejected(.invalidProviderToken) }
        guard
            registered.key.isValidES256Signature(Array(signatureBytes), for: Array((parts[0] + "." + parts[1]).utf8))
        else { return .rejected(.invalidProviderToken) }
        if now - issuedAt > Int(ProviderTokenRules.lifetime.components.seconds) {
            return .rejected(.expiredProviderToken)
        }
        if issuedAt - now > Int(ProviderTokenRules.allowedClockSkew.components.seconds) {
            return .rejected(.invalidProviderToken)
        }  // from the future
        return .valid(teamID: registered.teamID, keyID: keyID, issuedAt: issuedAt)
    }

    /// `iat` as Apple writes it, a JSON integer, or that integer's decimal digits as a JSON string,
    /// which a published client sends (protocol reference, Token authentication: why the mock
    /// takes it).
    static func issuedAt(_ claim: Any?) -> Int? {
        if let text = claim as? String {
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (48...57).contains($0) }) else {
                return nil
            }
            return Int(text)
        }
        return (claim as? NSNumber)?.intValue
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
