/// Apple's rules for provider tokens (JWTs signed with a `.p8` key, <doc:ProtocolReference#Token-authentication>): a token is
/// good for an hour, and a new one may be used at most once every 20 minutes. The token connector
/// and the mock server both read these values.
package enum ProviderTokenRules {
    /// How long after its `iat` APNs accepts a token (`ExpiredProviderToken` after): 60 minutes.
    package static let lifetime: Duration = .seconds(60 * 60)
    /// The shortest time between two new tokens for one key (`TooManyProviderTokenUpdates`
    /// sooner): 20 minutes.
    package static let minimumUpdateInterval: Duration = .seconds(20 * 60)
    /// How far in the future an `iat` may be before APNs calls the token invalid (clock skew): 5
    /// minutes, as the mock server applies it (Apple does not publish a figure).
    package static let allowedClockSkew: Duration = .seconds(5 * 60)

    /// The JWT header of a token signed with key `keyID`: `{"alg":"ES256","kid":"<keyID>"}`.
    package static func header(keyID: String) -> String {
        #"{"alg":"ES256","kid":""# + keyID + #""}"#
    }

    /// The JWT claims of a token for `teamID` issued at `issuedAt` (seconds since 1970):
    /// `{"iss":"<teamID>","iat":<issuedAt>}`.
    package static func claims(teamID: String, issuedAt: Int) -> String {
        #"{"iss":""# + teamID + #"","iat":"# + String(issuedAt) + "}"
    }

    /// Whether `id` has the shape of Apple's team and key ids: 10 ASCII letters and digits.
    package static func isAppleID(_ id: String) -> Bool {
        id.utf8.count == 10
            && id.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }
}
