import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// One error type to catch, with delivery and retry advice that are right for each failure.
@Suite struct ErrorModelTests {
    /// The catch pattern the docs show, compiled for real (a non-exhaustive typed catch that
    /// rethrows crashes Swift 6.3's SILGen; this exhaustive form does not).
    @Test func documentedCatchPattern() async {
        let connector = TokenRecordingConnector { _ in
            .rejected(.unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
        }
        var caught = ""
        do {
            try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test)
        } catch .rejected(let rejection) where rejection.reason == .unregistered {
            caught = "unregistered \(rejection.timestamp?.timeIntervalSince1970 ?? 0)"
        } catch .transport(let failure) where failure.delivery == .notSent {
            caught = "not sent"
        } catch {
            caught = error.description
        }
        #expect(caught == "unregistered 1700000000.0")
    }

    @Test func adviceAndDelivery() {
        let notSent = APNsError.transport(
            TransportError(kind: .connect, delivery: .notSent, curlCode: 7, message: "refused"))
        #expect(!notSent.mayHaveBeenDelivered)
        #expect(notSent.retryAdvice == .safe)
        #expect(
            notSent.description
                == "Transport failure (connect, curl 7): refused. The notification was not sent; sending it again cannot duplicate it. Nothing accepted the connection: check host, port and firewall (APNs also listens on 2197)."
        )
        let unknown = APNsError.transport(
            TransportError(kind: .connectionLost, delivery: .unknown, curlCode: 56, message: "reset"))
        #expect(unknown.mayHaveBeenDelivered)
        #expect(unknown.retryAdvice == .mayDuplicate)
        #expect(
            APNsError.transport(TransportError(kind: .cancelled, delivery: .unknown, message: "x")).retryAdvice
                == .never)
        let throttled = APNsError.rejected(
            APNsRejection(
                APNsHTTPResponse(
                    status: 429, headers: [.init(name: "retry-after", value: "30")],
                    body: Array(#"{"reason":"TooManyRequests"}"#.utf8))))
        #expect(throttled.retryAdvice == .afterDelay(.seconds(30)))
        #expect(!throttled.mayHaveBeenDelivered)
        #expect(APNsError.rejected(APNsRejection(status: 410, reason: .unregistered)).retryAdvice == .never)
        #expect(
            APNsError.rejected(APNsRejection(status: 403, reason: .expiredProviderToken)).retryAdvice
                == .afterRefreshingToken)
        #expect(
            APNsError.rejected(APNsRejection(status: 429, reason: .tooManyProviderTokenUpdates)).retryAdvice
                == .afterDelay(nil))
        #expect(
            APNsError.rejected(APNsRejection(status: 502, reason: nil)).retryAdvice == .withBackoff(retryAfter: nil))
        #expect(APNsError.validation(.emptyAlert).retryAdvice == .never)
    }

    @Test func invalidTimeoutsAndSettingsAreRejectedBeforeIO() async throws {
        let connector = TokenRecordingConnector()
        await #expect(throws: APNsError.validation(.invalidTimeout(.zero))) {
            try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test, timeout: .zero)
        }
        await #expect(throws: APNsError.validation(.invalidTimeout(.milliseconds(-5)))) {
            try await send(
                AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test, timeout: .milliseconds(-5)
            )
        }
        await #expect(throws: APNsError.validation(.invalidTimeout(.zero))) {
            try await send(
                AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: [Device.test], timeout: .zero)
        }
        #expect(connector.requests.isEmpty)
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        #expect(throws: APNsError.validation(.invalidTransportSetting(name: "requestTimeout", value: "0.0 seconds"))) {
            try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: .sandbox,
                transport: TransportConfiguration(requestTimeout: .zero))
        }
        #expect(throws: APNsError.validation(.invalidTransportSetting(name: "maximumConcurrentStreams", value: "0"))) {
            try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: .sandbox,
                transport: TransportConfiguration(maximumConcurrentStreams: 0))
        }
    }

    /// A custom connector's own error arrives as a transport failure with unknown delivery: nothing
    /// says it was not sent.
    @Test func foreignErrorsBecomeUnknownTransportFailures() async {
        struct Broken: Error, CustomStringConvertible { var description: String { "socket on fire" } }
        final class Failing: Connector {
            typealias Authentication = TokenAuthentication
            func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse { throw Broken() }
        }
        do {
            try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: Failing(), to: .test)
            Issue.record("expected a failure")
        } catch {
            #expect(error == .transport(TransportError(kind: .other, delivery: .unknown, message: "socket on fire")))
        }
    }
}
