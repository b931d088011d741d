#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A key, certificate or passphrase that cannot be used, found when a connector is made.
///
/// Messages name the problem and what to do; they never contain key bytes, certificates or
/// passphrases.
public enum CredentialError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A credential file could not be read.
    case unreadableFile(path: String, reason: String)
    /// The team id is not 10 letters and digits.
    case invalidTeamID(String)
    /// The key id is not 10 letters and digits.
    case invalidKeyID(String)
    /// The key file has Apple's name for another key, `AuthKey_<KEYID>.p8`: APNs would refuse
    /// every token signed with it as `InvalidProviderToken`.
    case keyIDDoesNotMatchKeyFile(keyID: String, fileKeyID: String)
    /// The data is not a PEM private key.
    case invalidPrivateKey(String)
    /// The key is not an EC P-256 key, which ES256 needs.
    case notAnES256Key(String)
    /// The private key is encrypted and no passphrase was given.
    case passphraseRequired
    /// The passphrase or PKCS#12 password is wrong.
    case wrongPassphrase
    /// The data is not a PEM certificate.
    case invalidCertificate(String)
    /// The private key does not belong to the certificate.
    case keyDoesNotMatchCertificate
    /// The data is not a PKCS#12 bundle, or it holds no certificate and key.
    case invalidPKCS12(String)
    /// A PKCS#12 bundle encrypted with a legacy cipher (RC2-40) that this OpenSSL cannot read.
    case legacyPKCS12
    /// The token refresh interval is outside Apple's 20–60 minute window.
    case refreshIntervalOutOfRange(seconds: Int)
    /// Signing a token failed inside libcrypto.
    case signingFailed(String)
    /// The certificate's validity ended; APNs refuses it.
    case certificateExpired(subject: String, notValidAfter: Date)
    /// The certificate is not valid yet (or this machine's clock is wrong).
    case certificateNotYetValid(subject: String, notValidBefore: Date)
    /// The certificate was issued for the other APNs environment.
    case certificateEnvironmentMismatch(
        connector: PushCertificate.Environment, certificate: [PushCertificate.Environment])
    /// The certificate does not cover the request's topic for its push type; `covered` lists the
    /// topics it does cover, with their kinds.
    case topicNotCovered(topic: String, pushType: PushType, covered: [String])
    /// The token key's scope does not include the connector's environment; APNs would answer
    /// 403 BadEnvironmentKeyIdInToken.
    case keyNotForEnvironment(keyID: String, connector: PushCertificate.Environment, key: [PushCertificate.Environment])
    /// No key of the connector (its key, and its related key if it has one) covers the request's
    /// app; `covered` lists the apps they do. APNs would answer 400 TopicDisallowed.
    case keyDoesNotCoverTopic(keyID: String, topic: String, covered: [String])

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        switch self {
        case let .unreadableFile(path, reason):
            return "Cannot read \(path): \(reason)."
        case let .invalidTeamID(id):
            return
                "The team id \"\(id)\" is not 10 letters and digits; copy it from the Membership page of your Apple developer account."
        case let .invalidKeyID(id):
            return
                "The key id \"\(id)\" is not 10 letters and digits; it is part of the .p8 file name (AuthKey_<KEYID>.p8)."
        case let .keyIDDoesNotMatchKeyFile(keyID, fileKeyID):
            return
                "The key id \"\(keyID)\" does not match the key file AuthKey_\(fileKeyID).p8: Apple names a key's file after its id, and APNs refuses tokens whose key id is not the key's (InvalidProviderToken). Pass keyID: \"\(fileKeyID)\", or the file of key \(keyID)."
        case let .invalidPrivateKey(detail):
            return "The private key is not a PEM private key (\(detail)). Pass the .p8 file Apple issued, unchanged."
        case let .notAnES256Key(detail):
            return
                "The key is not an EC P-256 key (\(detail)); APNs tokens are signed with ES256. Use the .p8 key from the Keys page of your developer account."
        case .passphraseRequired:
            return "The private key is encrypted; pass its passphrase."
        case .wrongPassphrase:
            return "The passphrase or password does not decrypt the key; check it."
        case let .invalidCertificate(detail):
            return
                "The certificate is not a PEM X.509 certificate (\(detail)). Export it from Keychain Access as .pem, or convert a .cer with `openssl x509 -inform der -in aps.cer -out aps.pem`."
        case .keyDoesNotMatchCertificate:
            return
                "The private key does not belong to the certificate. Export both from the same Keychain Access entry."
        case let .invalidPKCS12(detail):
            return "The file is not a PKCS#12 bundle with a certificate and its key (\(detail))."
        case .legacyPKCS12:
            return
                "The .p12 uses RC2-40 encryption, which OpenSSL 3 reads only with its legacy provider, which is not installed here. Re-export it: `openssl pkcs12 -legacy -in old.p12 -nodes -out both.pem && openssl pkcs12 -export -in both.pem -out new.p12`."
        case let .refreshIntervalOutOfRange(seconds):
            return
                "A token refresh interval of \(seconds) s is outside Apple's window: refresh no more often than every 20 minutes and at least every 60 (protocol reference, Token authentication)."
        case let .signingFailed(detail):
            return "Signing the provider token failed: \(detail)."
        case let .certificateExpired(subject, notValidAfter):
            return
                "The certificate \(subject) expired at \(notValidAfter.formatted(.iso8601)); APNs refuses it. Create a new one on the Certificates page of your developer account, or use token authentication (a .p8 key does not expire)."
        case let .certificateNotYetValid(subject, notValidBefore):
            return
                "The certificate \(subject) is valid only from \(notValidBefore.formatted(.iso8601)); check this machine's clock."
        case let .certificateEnvironmentMismatch(connector, certificate):
            let names = certificate.map(\.rawValue).joined(separator: " and ")
            return
                "The certificate is for the \(names) environment, not \(connector): APNs would answer BadCertificateEnvironment. Use environment .\(certificate.first?.rawValue ?? "sandbox"), or a certificate for \(connector) (a universal certificate covers both)."
        case let .topicNotCovered(topic, pushType, covered):
            let list = covered.isEmpty ? "none" : covered.joined(separator: ", ")
            return
                "The certificate does not cover topic \(topic) for \(pushType) pushes; it covers: \(list). Send to a topic it covers, use a certificate issued for this app and push type, or use token authentication."
        case let .keyNotForEnvironment(keyID, connector, key):
            let names = key.map(\.rawValue).joined(separator: " and ")
            return
                "The key \(keyID) is for the \(names) environment only, not \(connector): APNs would answer BadEnvironmentKeyIdInToken. Use environment .\(key.first?.rawValue ?? "sandbox"), or a key made for \(connector) (a team key for both environments covers either)."
        case let .keyDoesNotCoverTopic(keyID, topic, covered):
            return
                "The key \(keyID) does not cover \(topic): it is a topic-specific key for \(covered.isEmpty ? "no app" : covered.joined(separator: ", ")). Send for an app it covers, add the app to the key in the developer account, or use a team-scoped key. APNs would answer TopicDisallowed."
        }
    }
}
