extension KeyScope {
    /// Whether the key sends to `environment`; a custom host (a mock, a proxy) takes either.
    public func covers(_ environment: APNsEnvironment) -> Bool {
        environment.certificateEnvironment.map(environments.contains) ?? true
    }
}

/// A topic-specific key's related key: Apple allows one per environment, and tokens of both may be
/// sent on one connection. A connector given one signs each request with the first of its keys
/// whose scope covers the request's app.
///
/// Thread safety: a value; `Sendable`.
public struct RelatedKey: Sendable {
    /// The related key's 10-character id (`kid`).
    public let keyID: String
    /// The related key: PEM text, its bytes, or its path.
    public let key: CredentialSource
    /// What the related key may send.
    public let scope: KeyScope

    public init(keyID: String, key: CredentialSource, scope: KeyScope) {
        self.keyID = keyID
        self.key = key
        self.scope = scope
    }
}

extension APNsEnvironment {
    /// The environment a credential (a key's scope, a certificate) must be for to send here; nil
    /// for a custom host (a mock or a proxy), which takes either.
    var certificateEnvironment: PushCertificate.Environment? {
        switch self {
        case .sandbox: .sandbox
        case .production: .production
        default: nil
        }
    }
}

extension APNsRequest {
    /// The app a request acts for: a device push's topic without its push type's suffix, a
    /// broadcast's or a channel request's bundle id in its path; nil when the request names none.
    var bundleID: String? {
        switch service {
        case .device:
            guard let topic = self[header: .apnsTopic] else { return nil }
            let pushType = self[header: .apnsPushType].flatMap(PushType.init(rawValue:)) ?? .alert
            return pushType.bundleID(fromTopic: topic) ?? topic
        case .broadcast:
            return path.hasPrefix("/4/broadcasts/apps/") ? String(path.dropFirst("/4/broadcasts/apps/".count)) : nil
        case .management:
            guard path.hasPrefix("/1/apps/") else { return nil }
            return path.dropFirst("/1/apps/".count).split(separator: "/").first.map(String.init)
        }
    }
}

/// The keys a token connector signs with — its own, and a topic key's related key — each with its
/// scope when the caller stated it. A request is signed by the first whose scope covers its app.
///
/// Thread safety: `Sendable`; each key's tokens are behind their own lock.
struct TokenKeys: Sendable {
    struct Key: Sendable {
        let tokens: ProviderTokens
        let scope: KeyScope?
    }

    let keys: [Key]

    /// The one key of a connector told nothing of its scope signs everything, without looking at
    /// the request (the path every send of such a connector takes).
    private var signsEverything: Bool { keys.count == 1 && keys[0].scope == nil }

    /// The key that signs `request`; a ``CredentialError/keyDoesNotCoverTopic(keyID:topic:covered:)``
    /// when none covers its app.
    func signer(for request: APNsRequest) throws(CredentialError) -> ProviderTokens {
        if signsEverything { return keys[0].tokens }
        guard let bundleID = request.bundleID else { return keys[0].tokens }
        if let key = keys.first(where: { $0.scope?.covers(bundleID: bundleID) ?? true }) { return key.tokens }
        let covered = keys.flatMap { $0.scope?.bundleIDs.map { $0.sorted() } ?? [] }
        throw .keyDoesNotCoverTopic(
            keyID: keys.map(\.tokens.keyID).joined(separator: " or "), topic: bundleID, covered: covered)
    }
}
