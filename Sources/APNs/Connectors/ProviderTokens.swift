import Foundation

/// The provider tokens of one `.p8` key: minted on first use, shared by every request, re-minted
/// inside Apple's window (<doc:ProtocolReference#Token-authentication>), and renewed once when APNs
/// calls the one sent expired.
///
/// Thread safety: `Sendable`; the current token is behind a lock, so concurrent sends mint at most
/// one between them.
final class ProviderTokens: Sendable {
    /// A minted token and when it was issued.
    struct Token: Sendable {
        let value: String
        let issuedAt: Int
        /// The `authorization` header's value, made once per token.
        let header: String

        init(value: String, issuedAt: Int) {
            self.value = value
            self.issuedAt = issuedAt
            header = "bearer " + value
        }
    }

    let teamID: String
    let keyID: String
    let refreshInterval: Duration
    private let signer: ES256Signer
    private let clock: @Sendable () -> Date
    private let observability: Observability
    private let cache = Locked<Token?>(nil)

    /// Signs a first token at once: a key that cannot sign fails when the connector is made, not on
    /// its first send.
    init(
        teamID: String, keyID: String, key: CredentialSource, refreshInterval: Duration,
        clock: @escaping @Sendable () -> Date, observability: Observability
    ) throws(CredentialError) {
        self.teamID = teamID
        self.keyID = keyID
        self.refreshInterval = refreshInterval
        self.clock = clock
        self.observability = observability
        signer = try ES256Signer(pem: OpenSSL.load(key))
        _ = try current()
    }

    /// The token to send now, minting one if there is none or it is older than `refreshInterval`.
    @inline(never)  // minting stays out of the async frame of every send that asks
    func current() throws(CredentialError) -> Token {
        let now = Int(clock().timeIntervalSince1970)
        let interval = Int(refreshInterval.components.seconds)
        return try cache.withLock { (cached: inout Token?) throws(CredentialError) -> Token in
            if let token = cached, now - token.issuedAt < interval, now >= token.issuedAt { return token }
            let token = try mint(issuedAt: now)
            cached = token
            return token
        }
    }

    /// The token a request APNs refused is sent once more with, following Apple's remedies
    /// (protocol reference, Responses): after ExpiredProviderToken a new one (nil when `sent` is
    /// too young to have expired: the clock is wrong); after UnrelatedKeyIdInToken the same one,
    /// which the transport writes on a new connection (it retires the one that answered:
    /// `CurlMultiLoop.retireTiedToAnotherKey`). Nil for any other rejection. Counted as a retry.
    @inline(never)
    func secondAttempt(after rejection: APNsRejection, sent: Token) -> Token? {
        guard rejection.status == 403 else { return nil }
        switch rejection.reason {
        case .expiredProviderToken:
            guard let fresh = try? refresh(after: sent) else { return nil }
            observability.retried(.expiredToken)
            return fresh
        case .unrelatedKeyIdInToken:
            observability.retried(.unrelatedKey)
            return sent
        default:
            return nil
        }
    }

    /// After APNs called `rejected` expired: a new token, unless `rejected` is younger than 20
    /// minutes (then the clock is wrong and a new token would only earn TooManyProviderTokenUpdates).
    private func refresh(after rejected: Token) throws(CredentialError) -> Token? {
        let now = Int(clock().timeIntervalSince1970)
        return try cache.withLock { (cached: inout Token?) throws(CredentialError) -> Token? in
            if let token = cached, token.value != rejected.value { return token }  // someone refreshed already
            guard now - rejected.issuedAt >= TokenConnector.refreshWindow.lowerBound else { return nil }
            let token = try mint(issuedAt: now)
            cached = token
            return token
        }
    }

    private func mint(issuedAt: Int) throws(CredentialError) -> Token {
        let header = ProviderTokenRules.header(keyID: keyID)
        let claims = ProviderTokenRules.claims(teamID: teamID, issuedAt: issuedAt)
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try signer.sign(Array(signingInput.utf8))
        if observability.isEnabled {
            observability.tokensMinted.increment()
            // The ids and the time only: never the token, which is a credential for an hour.
            observability.logger.info(
                "APNs provider token minted",
                metadata: [
                    "apns.team_id": "\(teamID)", "apns.key_id": "\(keyID)", "apns.token.issued_at": "\(issuedAt)",
                ])
        }
        return Token(value: signingInput + "." + Base64URL.encode(signature), issuedAt: issuedAt)
    }
}

/// base64url without padding (RFC 7515 §2).
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
