import APNs
import Foundation
import Testing

@Suite struct ResponseTests {
    /// Apple's remedy for UnrelatedKeyIdInToken is a new connection, not a new key.
    @Test func unrelatedKeyIdInTokenAdvisesANewConnection() {
        let reason = APNsRejection.Reason.unrelatedKeyIdInToken
        #expect(reason.defaultStatus == 403)
        #expect(reason.retry == .onNewConnection)
        #expect(
            reason.advice
                == "APNs ties a connection to the key of its first push, and this token was signed with another key that is not its related key: send it again on a new connection (the token connector does so once by itself), and keep tokens of unrelated keys on connections of their own (one token connector per key; a topic key and its related key may share one: TokenConnector's relatedKey:)."
        )
        #expect(APNsRejection.Reason.invalidProviderToken.advice.hasPrefix("Check the key id"))
    }

    /// The reasons that refuse the credential itself, and those that do not though they are 403s.
    @Test func reasonsThatRefuseTheCredential() {
        let refusing: Set<APNsRejection.Reason> = [
            .invalidProviderToken, .missingProviderToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken,
            .badCertificate, .badCertificateEnvironment, .forbidden,
        ]
        for reason in APNsRejection.Reason.allKnown {
            #expect(reason.refusesTheCredential == refusing.contains(reason), "\(reason)")
        }
        #expect(!APNsRejection.Reason.expiredProviderToken.refusesTheCredential)  // a new token is minted
        #expect(!APNsRejection.Reason.unrelatedKeyIdInToken.refusesTheCredential)  // a new connection is opened
        #expect(!APNsRejection.Reason(rawValue: "SomethingNew").refusesTheCredential)
    }

    @Test func acceptedResponse() throws {
        let response = try APNsResponse(
            interpreting: APNsHTTPResponse(
                status: 200,
                headers: [
                    .init(name: "apns-id", value: "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c"),
                    .init(name: "apns-unique-id", value: "u-1"),
                ]))
        #expect(response.apnsID?.description == "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c")
        #expect(response.uniqueID == "u-1")
    }

    @Test func unregisteredWithMillisecondTimestamp() {
        let body = #"{"reason":"Unregistered","timestamp":1700000000123}"#
        let raw = APNsHTTPResponse(
            status: 410,
            headers: [
                .init(name: "apns-id", value: "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c"),
                .init(name: "apns-unique-id", value: "u-9"),
            ], body: Array(body.utf8))
        #expect(
            throws: APNsRejection(
                status: 410, reason: .unregistered, apnsID: APNsID("7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c"),
                uniqueID: "u-9",
                timestamp: Date(timeIntervalSince1970: 1_700_000_000.123), body: Array(body.utf8))
        ) {
            try APNsResponse(interpreting: raw)
        }
    }

    @Test func everyDocumentedReasonDecodesAndUnknownOnesAreKept() {
        for (reason, status) in APNsRejection.Reason.statusByReason {
            let rejection = APNsRejection(status: status, body: Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8))
            #expect(rejection.reason == reason)
            #expect(rejection.reason?.isKnown == true)
        }
        #expect(APNsRejection.Reason.allKnown.count == 42)
        let novel = APNsRejection(status: 400, body: Array(#"{"reason":"BrandNewReason"}"#.utf8))
        #expect(novel.reason?.rawValue == "BrandNewReason")
        #expect(novel.reason?.isKnown == false)
    }

    /// A proxy's HTML page or an empty 5xx is not APNs' JSON: no reason is invented, the body is
    /// kept, and the advice comes from the status.
    @Test func bodiesThatAreNotAPNsJSON() {
        let html = APNsRejection(
            APNsHTTPResponse(status: 502, headers: [], body: Array("<html>bad gateway</html>".utf8)))
        #expect(html.reason == nil)
        #expect(html.body == Array("<html>bad gateway</html>".utf8))
        #expect(html.retry == .withBackoff)
        #expect(
            html.description
                == "APNs rejected the request: 502 with a body that is not APNs' JSON (24 bytes). A server-side failure: retry with back-off."
        )
        let empty = APNsRejection(APNsHTTPResponse(status: 503, headers: [.init(name: "retry-after", value: "7")]))
        #expect(empty.reason == nil)
        #expect(empty.retryAfter == .seconds(7))
        #expect(empty.retry == .withBackoff)
        #expect(
            empty.description
                == "APNs rejected the request: 503 with no reason, retry after 7 s. A server-side failure: retry with back-off."
        )
        let throttled = APNsRejection(
            APNsHTTPResponse(status: 429, headers: [.init(name: "retry-after", value: "bogus")]))
        #expect(throttled.retry == .later)
        #expect(throttled.retryAfter == nil)
        let notFound = APNsRejection(APNsHTTPResponse(status: 404, headers: [], body: Array("nope".utf8)))
        #expect(notFound.retry == .never)
        #expect(APNsRejection(status: 500, body: Array(#"{"reason":"#.utf8)).reason == nil)
    }

    @Test func retryAdvice() {
        #expect(APNsRejection.Reason.badDeviceToken.retry == .never)
        #expect(APNsRejection.Reason.badDeviceToken.advice.contains("environment"))
        #expect(APNsRejection.Reason.deviceTokenNotForTopic.advice.contains("configuration mistake"))
        #expect(APNsRejection.Reason.tooManyRequests.retry == .later)
        #expect(APNsRejection.Reason.tooManyProviderTokenUpdates.retry == .later)
        #expect(APNsRejection.Reason.expiredProviderToken.retry == .afterRefreshingToken)
        #expect(APNsRejection.Reason.serviceUnavailable.retry == .withBackoff)
        #expect(APNsRejection.Reason.unregistered.retry == .never)
    }
}
