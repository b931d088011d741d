import APNsCore
import Foundation
import Testing

@Suite struct ResponseTests {
    @Test func acceptedResponse() throws {
        let response = try APNsResponse(interpreting: HTTPResponse(status: 200, headers: [
            .init(name: "apns-id", value: "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c"), .init(name: "apns-unique-id", value: "u-1"),
        ]))
        #expect(response.apnsID?.description == "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c")
        #expect(response.uniqueID == "u-1")
    }

    @Test func unregisteredWithMillisecondTimestamp() {
        let raw = HTTPResponse(status: 410, headers: [], body: Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8))
        #expect(throws: APNsRejection(status: 410, reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000.123))) {
            try APNsResponse(interpreting: raw)
        }
    }

    @Test func everyDocumentedReasonDecodesAndUnknownOnesAreKept() {
        for (reason, status) in APNsRejection.Reason.statusByReason {
            let rejection = APNsRejection(status: status, body: Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8))
            #expect(rejection.reason == reason)
            #expect(rejection.reason.isKnown)
        }
        #expect(APNsRejection.Reason.allKnown.count == 41)
        let novel = APNsRejection(status: 400, body: Array(#"{"reason":"BrandNewReason"}"#.utf8))
        #expect(novel.reason.rawValue == "BrandNewReason")
        #expect(!novel.reason.isKnown)
        #expect(APNsRejection(status: 502, body: Array("<html>".utf8)).reason.rawValue == "HTTP 502: <html>")
    }

    @Test func retryAdvice() {
        #expect(APNsRejection.Reason.badDeviceToken.retry == .never)
        #expect(APNsRejection.Reason.tooManyRequests.retry == .later)
        #expect(APNsRejection.Reason.expiredProviderToken.retry == .afterRefreshingToken)
        #expect(APNsRejection.Reason.serviceUnavailable.retry == .withBackoff)
    }
}
