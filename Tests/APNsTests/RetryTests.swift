import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// Opt-in retries: only what cannot duplicate, Retry-After honoured, all within one deadline.
///
/// The waits before a retry run on the connector's wait clock, which these tests give: an
/// ``ImmediateWaitClock`` records each back-off and moves on, a ``ManualWaitClock`` holds a retry
/// until the test advances it. No test here waits for real time.
@Suite struct RetryTests {
    static let quick = RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(10), jitter: 0)

    /// The policy of a send that may retry once, after 5 s.
    static let once = RetryPolicy(maximumAttempts: 2, initialBackoff: .seconds(5), jitter: 0)

    /// A send refused once with 503 (``once`` allows one retry after 5 s), once its wait for the
    /// retry has begun on a clock the test advances.
    static func waitingToRetry(_ fixture: Fixture) async throws -> (ManualWaitClock, Task<APNsResponse, any Error>) {
        fixture.server.inject(.respond(status: 503, retryAfter: nil, body: ""), requests: 1)
        let clock = ManualWaitClock()
        let connector = try Self.connector(fixture, clock: clock)
        let sending = Task {
            try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test,
                timeout: .seconds(60), retry: once)
        }
        await clock.untilSleeping()
        return (clock, sending)
    }

    /// A token connector to the fixture's server whose waits before a retry run on `clock`.
    static func connector(_ fixture: Fixture, clock: any WaitClock) throws -> TokenConnector {
        try fixture.tokenConnector(reportingTo: AwaitableReports()) { $0.waitClock = WaitClockReference(clock) }
    }

    @Test func serverErrorsAreRetriedUntilAccepted() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: 503, retryAfter: nil, body: ""), requests: 2)
            let clock = ImmediateWaitClock()
            let connector = try Self.connector(fixture, clock: clock)
            let id = APNsID()
            let response = try await send(
                AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: connector, to: .test,
                retry: Self.quick)
            #expect(response.status == 200)
            #expect(fixture.server.faultsApplied == 2)
            #expect(fixture.server.streamCount == 1)
            #expect(fixture.server.processedCount(apnsID: id.description) == 1)
            #expect(clock.waits == [.milliseconds(10), .milliseconds(20)])
        }
    }

    /// A retry is sent when its back-off has passed on the connector's clock, not before.
    @Test func aRetryWaitsForItsBackoffOnTheConnectorsClock() async throws {
        try await Fixture.with { fixture in
            let (clock, sending) = try await Self.waitingToRetry(fixture)
            #expect(fixture.server.faultsApplied == 1)
            clock.advance(by: .seconds(4))
            #expect(fixture.server.requests.isEmpty, "the retry waits for the rest of its back-off")
            #expect(clock.sleeping == 1)
            clock.advance(by: .seconds(1))
            let response = try await sending.value
            #expect(response.status == 200)
            #expect(fixture.server.faultsApplied == 1)
            #expect(fixture.server.requests.count == 1)
        }
    }

    /// A wait before a retry that is cancelled ends the send the same way on every path: the
    /// earlier failure when it may have been delivered, else a cancellation that sent nothing. A
    /// bulk send's waits end with the bulk send: nothing is sent after its reader stops.
    @Test func aCancelledWaitEndsTheSendTheSameWayOnEveryPath() async throws {
        let rejected = APNsError.rejected(APNsRejection(status: 503, reason: .serviceUnavailable))
        let mayHaveArrived = APNsError.transport(
            TransportError(kind: .connectionLost, delivery: .unknown, message: "x"))
        #expect(
            RetryPolicy.endingCancelledWait(after: rejected).mayHaveBeenDelivered == false
                && transportFailure(RetryPolicy.endingCancelledWait(after: rejected))?.kind == .cancelled)
        #expect(RetryPolicy.endingCancelledWait(after: mayHaveArrived) == mayHaveArrived)
        try await Fixture.with { fixture in
            let (clock, sending) = try await Self.waitingToRetry(fixture)
            sending.cancel()
            let error = await #expect(throws: APNsError.self) { try await sending.value }
            #expect(error.flatMap(transportFailure)?.kind == .cancelled)
            #expect(error.flatMap(transportFailure)?.delivery == .notSent)
            #expect(clock.sleeping == 0)

            // The bulk send: ten devices refused with 503 wait to retry; the reader stops.
            fixture.server.inject(.respond(status: 503, retryAfter: nil, body: ""), requests: 10)
            let bulkClock = ManualWaitClock()
            let bulkConnector = try Self.connector(fixture, clock: bulkClock)
            let reading = Task {
                var outcomes = 0
                for try await _ in try bulkSendOutcomes(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: bulkConnector,
                    to: BulkSendTests.devices(10), timeout: .seconds(60), retry: Self.once)
                {
                    outcomes += 1
                }
                return outcomes
            }
            await bulkClock.untilSleeping(10)
            reading.cancel()
            _ = await reading.result
            await bulkClock.untilAwake()
            bulkClock.advance(by: .seconds(60))
            #expect(fixture.server.faultsApplied == 11)
            #expect(fixture.server.requests.isEmpty, "no device was sent again")
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
            let clock = ImmediateWaitClock()
            let connector = try Self.connector(fixture, clock: clock)
            let response = try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test,
                retry: Self.quick)
            #expect(response.status == 200)
            #expect(clock.waits == [.seconds(1)])
        }
    }

    /// A Retry-After beyond the deadline: no retry, the rejection comes back at once.
    @Test func retriesStayWithinTheDeadline() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: 503, retryAfter: 10, body: ""), requests: 1)
            let clock = ImmediateWaitClock()
            let connector = try Self.connector(fixture, clock: clock)
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
            // Not retried: waiting out Retry-After would pass the deadline; one fault was met.
            #expect(clock.waits.isEmpty)
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
            let clock = ImmediateWaitClock()
            let connector = try Self.connector(fixture, clock: clock)
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
            // Each fault is waited out once: 10 ms after a device's first failure, 20 ms after its
            // second (a retry that met one of the 30 faults again).
            #expect(clock.waits.count == 30)
            #expect(clock.waits.allSatisfy { $0 == .milliseconds(10) || $0 == .milliseconds(20) })
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
