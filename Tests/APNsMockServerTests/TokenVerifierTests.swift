@testable import APNs
@testable import APNsMockServer
import Foundation
import Testing

/// The mock's reading of provider tokens, given the time: tokens written here by hand, signed
/// with the library's signer, so that a claim can be what no client of ours would write.
@Suite struct TokenVerifierTests {
    static let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
    static let issued = 1_700_000_000

    static func authorization(claims: String) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY0000001"}"#.utf8))
        let body = Base64URL.encode(Array(claims.utf8))
        let signature = try ES256Signer(pem: Array(key.privateKeyPEM.utf8)).sign(Array("\(header).\(body)".utf8))
        return "bearer \(header).\(body).\(Base64URL.encode(signature))"
    }

    @Test(arguments: [
        #"{"iss":"TEAM000001","iat":1700000000}"#,
        #"{"iss":"TEAM000001","iat":"1700000000"}"#,
    ])
    func acceptsIssuedAtAsANumberOrItsDigits(claims: String) throws {
        let verifier = try TokenVerifier(keys: [Self.key])
        #expect(
            verifier.verify(authorization: try Self.authorization(claims: claims), now: Self.issued + 60)
                == .valid(teamID: "TEAM000001", keyID: "KEY0000001", issuedAt: Self.issued))
    }

    @Test(arguments: [
        #"{"iss":"TEAM000001","iat":""}"#, #"{"iss":"TEAM000001","iat":"1.7e9"}"#,
        #"{"iss":"TEAM000001","iat":"-1700000000"}"#, #"{"iss":"TEAM000001","iat":" 1700000000"}"#,
        #"{"iss":"TEAM000001","iat":"99999999999999999999"}"#, #"{"iss":"TEAM000001"}"#,
    ])
    func refusesAnyOtherIssuedAt(claims: String) throws {
        let verifier = try TokenVerifier(keys: [Self.key])
        #expect(
            verifier.verify(authorization: try Self.authorization(claims: claims), now: Self.issued)
                == .rejected(.invalidProviderToken))
    }

    @Test func aStringIssuedAtIsJudgedForAgeLikeANumber() throws {
        let verifier = try TokenVerifier(keys: [Self.key])
        let token = try Self.authorization(claims: #"{"iss":"TEAM000001","iat":"1700000000"}"#)
        #expect(verifier.verify(authorization: token, now: Self.issued + 3_601) == .rejected(.expiredProviderToken))
    }
}
