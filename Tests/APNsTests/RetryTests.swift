import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// Opt-in retries: only what cannot duplicate, Retry-After honoured, all within one deadline.
@Suite struct RetryTests {
    static let quick = RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(10), jitter: 0)

    @Test func serverErrorsAreRetriedUntilAccepted() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: 503, retryAfter: nil, body: ""), requests: 2)
            let connector = try fixture.tokenConnector()
            let id = APNsID()
            let response = try await send(
                AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: connector, to: .test,
                retry: Self.quick)
            #expect(response.status == 200)
            #expect(fixture.server.faultsApplied == 2)
            #expect(fixture.server.streamCount == 1)
            #expect(fixture.server.processedCount(apnsID: id.description) == 1)
        }
    }

    @Test func withoutAPolicyNothingIsRetried() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: 503, retryAfter: nil, body: ""), requests: 1)
            let connector = try fixture.tokenConnector()
            let error = await #expect(throws: APNsError.self) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            #expect(error?.retryAdvice == .withBackoff(retryAfter: nil))
            #expect(fixture.server.faultsApplied == 1)
            #expect(fixture.server.streamCount == 0)
        }
    }

    @Test func retryAfterIsHonoured() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(
                .respond(status: 429, retryAfter: 1, body: #"{"reason":"TooManyRequests"}"#), requests: 1)
            let connector = try fixture.tokenConnector()
            let start = ContinuousClock.now
            let response = try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test,
                retry: Self.quick)
            #expect(response.status == 200)
            #expect(ContinuousClock.now - start >= .seconds(1))
        }
    }

    /// A Retry-After beyond the deadline: no retry, the rejection comes back at once.
    @Test func retriesStayWithinTheDeadline() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: 503, retryAfter: 10, body: ""), requests: 1)
            let connector = try fixture.tokenConnector()
            let start = ContinuousClock.now
            let error = await #expect(throws: APNsError.self) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test,
                    timeout: .seconds(2), retry: Self.quick)
            }
            guard case .rejected(let rejection)? = error else {
                Issue.record("expected the 503, got \(String(describing: error))"); return
            }
            #expect(rejection.status == 503)
            #expect(rejection.retryAfter == .seconds(10))
            // Not retried: waiting out Retry-After would take 10 s; one fault was met.
            #expect(ContinuousClock.now - start < .seconds(9))
            #expect(fixture.server.faultsApplied == 1)
        }
    }

    /// 400, 410 and a failure that may have been delivered are never retried.
    @Test func neverRetriesWhatCouldDuplicateOrCannotSucceed() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            fixture.server.reject(deviceToken: Device.test.token, with: .badDeviceToken)
            await expectRejection(.badDeviceToken, status: 400) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test,
                    retry: .attempts(5))
            }
            fixture.server.reject(deviceToken: Device.test.token, with: .unregistered, timestamp: Date())
            await expectRejection(.unregistered, status: 410) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test,
                    retry: .attempts(5))
            }
            fixture.server.reject(deviceToken: Device.test.token, with: nil)
            #expect(fixture.server.streamCount == 2)
            // Faults apply to connections opened after `inject`: a new connector.
            fixture.server.inject(.resetStreamsAfterProcessing(errorCode: 2), requests: 1)
            let fresh = try fixture.tokenConnector()
            let id = APNsID()
            let error = await #expect(throws: APNsError.self) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: fresh, to: .test,
                    retry: .attempts(5))
            }
            #expect(error?.mayHaveBeenDelivered == true)
            #expect(fixture.server.processedCount(apnsID: id.description) == 1)
            #expect(fixture.server.faultsApplied == 1)
        }
    }

    @Test func bulkSendsRetryPerDevice() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(
                .respond(status: 500, retryAfter: nil, body: #"{"reason":"InternalServerError"}"#), requests: 30)
            let connector = try fixture.tokenConnector()
            var accepted = 0
            for try await outcome in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector,
                to: BulkSendTests.devices(100), maximumInFlight: 20, retry: Self.quick)
            {
                if outcome.isAccepted { accepted += 1 }
            }
            #expect(accepted == 100)
            #expect(fixture.server.faultsApplied == 30)
            #expect(fixture.server.streamCount == 100)
        }
    }

    @Test func policyArithmetic() {
        let policy = RetryPolicy(
            maximumAttempts: 4, initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(250), jitter: 0)
        let notSent = APNsError.transport(TransportError(kind: .connect, delivery: .notSent, message: "x"))
        #expect(policy.delay(after: notSent, attempt: 1) == .milliseconds(100))
        #expect(policy.delay(after: notSent, attempt: 2) == .milliseconds(200))
        #expect(policy.delay(after: notSent, attempt: 3) == .milliseconds(250))
        #expect(policy.delay(after: notSent, attempt: 4) == nil)
        let throttled = APNsError.rejected(
            APNsRejection(status: 429, reason: .tooManyRequests, retryAfter: .seconds(3)))
        #expect(policy.delay(after: throttled, attempt: 1) == .seconds(3))
        #expect(
            policy.delay(
                after: .transport(TransportError(kind: .connectionLost, delivery: .unknown, message: "x")), attempt: 1)
                == nil)
        #expect(
            policy.delay(
                after: .transport(TransportError(kind: .circuitOpen, delivery: .notSent, message: "x")), attempt: 1)
                == nil)
        #expect(
            policy.delay(after: .rejected(APNsRejection(status: 403, reason: .invalidProviderToken)), attempt: 1) == nil
        )
        #expect(
            policy.delay(after: .rejected(APNsRejection(status: 429, reason: .tooManyProviderTokenUpdates)), attempt: 1)
                == nil)
        #expect(RetryPolicy.none.delay(after: notSent, attempt: 1) == nil)
    }
}
