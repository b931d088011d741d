import APNs
@testable import APNsGateway
import Foundation
import Testing

/// The sender's lease and the API's rate limit as the values they are: given the time and the
/// events, every transition is checked without a database, a socket or a wait. (LeaseTests drives
/// the same lease through real stores and senders; GatewayAPITests the limit through the API.) No
/// decision reads a clock: the instants are counted from a fixed origin.
@Suite struct SenderLeaseTests {
    /// A whole second, so that an instant reached in steps equals the same instant reached at once.
    let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    func at(_ seconds: Double) -> Date { start + .milliseconds(Int((seconds * 1000).rounded())) }

    /// A lease of 40 s for sends of at most 30 s, renewed every second: a send may start while the
    /// lease outlasts it by 31 s.
    func lease() -> SenderLease { SenderLease(lease: .seconds(40), timeout: .seconds(30), heartbeat: .seconds(1)) }

    @Test func anUnregisteredSenderStartsUnderEachClaimsOwnLease() {
        let lease = lease()
        #expect(lease.state == .unregistered)
        #expect(lease.mayStart(at: at(0)))
        #expect(lease.mayStart(at: at(1_000)))
    }

    @Test func aRegisteredSenderStartsWhileTheLeaseOutlastsASendAndAHeartbeat() {
        var lease = lease()
        lease.renewed(startedAt: at(0))
        #expect(lease.state == .held(until: at(40)))
        #expect(lease.mayStart(at: at(0)))
        #expect(lease.mayStart(at: at(9)))  // 9 + 31 = 40: the last moment
        #expect(!lease.mayStart(at: at(9.001)))
    }

    @Test func aRenewalCountsFromWhenItBeganNotWhenItEnded() {
        var lease = lease()
        lease.renewed(startedAt: at(0))
        // A heartbeat that began at 5 s and took 4 s to come back holds the claims until 45 s.
        lease.renewed(startedAt: at(5))
        #expect(lease.state == .held(until: at(45)))
        #expect(lease.mayStart(at: at(14)))
        #expect(!lease.mayStart(at: at(14.5)))
    }

    @Test func failedRenewalsPauseSendsBeforeTheLeaseCouldRunOutAndARenewalResumesThem() {
        var lease = lease()
        lease.renewed(startedAt: at(0))
        // Heartbeats at 1…9 s fail: nothing changes while a send would still end in time.
        for second in 1...9 { #expect(lease.judge(at: at(Double(second))) == nil) }
        #expect(!lease.isPaused)
        #expect(lease.judge(at: at(10)) == .paused)
        #expect(lease.isPaused)
        #expect(lease.judge(at: at(11)) == nil, "said once, not at every heartbeat")
        #expect(!lease.mayStart(at: at(11)))
        lease.renewed(startedAt: at(12))
        #expect(lease.judge(at: at(12.2)) == .resumed)
        #expect(lease.mayStart(at: at(12.2)))
        #expect(lease.judge(at: at(13)) == nil)
    }

    @Test func aHeartbeatStuckOnTheDatabaseStopsSendsAsSurelyAsAFailedOne() {
        var lease = lease()
        lease.renewed(startedAt: at(0))
        // No judgement is made while the heartbeat hangs; each send asks at its own start.
        #expect(lease.mayStart(at: at(8)))
        #expect(!lease.mayStart(at: at(20)))
        #expect(!lease.isPaused, "only a judgement changes the logged verdict")
    }

    @Test func aSenderTakenOverNeverSendsAgainEvenAfterARenewal() {
        var lease = lease()
        lease.renewed(startedAt: at(0))
        lease.takenOver()
        #expect(lease.state == .lost)
        #expect(!lease.mayStart(at: at(0)))
        #expect(lease.judge(at: at(1)) == .paused)
        lease.renewed(startedAt: at(2))  // a renewal in flight when the registration went
        #expect(lease.state == .lost)
        #expect(!lease.mayStart(at: at(2)))
        #expect(lease.judge(at: at(3)) == nil)
    }
}

@Suite struct RateLimiterTests {
    /// A whole second, so that the instants' differences are exact.
    let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    func at(_ seconds: Double) -> Date { start + .milliseconds(Int((seconds * 1000).rounded())) }

    @Test func aNewKeyMayBurstToTwiceItsRateThenWaitsForTheNextToken() {
        let limiter = RateLimiter()
        for _ in 0..<4 { #expect(limiter.admit(key: "k", rate: 2, now: at(0)) == nil) }
        #expect(limiter.admit(key: "k", rate: 2, now: at(0)) == 0.5)
        #expect(limiter.admit(key: "k", rate: 2, now: at(0.25)) == 0.25, "the wait shrinks as the bucket refills")
        #expect(limiter.admit(key: "k", rate: 2, now: at(0.5)) == nil)
        #expect(limiter.admit(key: "k", rate: 2, now: at(0.5)) == 0.5)
    }

    @Test func aTokenGivenBackIsTheNextRequestsAndNoMoreThanTheBurst() {
        let limiter = RateLimiter()
        for _ in 0..<2 { #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == nil) }
        limiter.giveBack(key: "k", rate: 1)
        #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == nil)
        #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == 1)
        for _ in 0..<5 { limiter.giveBack(key: "k", rate: 1) }
        for _ in 0..<2 { #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == nil) }
        #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == 1)
    }

    @Test func anIdleBucketRefillsToItsBurstAndNoFurther() {
        let limiter = RateLimiter()
        for _ in 0..<2 { #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == nil) }
        #expect(limiter.admit(key: "k", rate: 1, now: at(0)) == 1)
        // An hour idle leaves the burst (2), not 3,600 requests.
        for _ in 0..<2 { #expect(limiter.admit(key: "k", rate: 1, now: at(3_600)) == nil) }
        #expect(limiter.admit(key: "k", rate: 1, now: at(3_600)) == 1)
    }

    @Test func aSlowKeyStillGetsOneRequestAndKeysDoNotShareABucket() {
        let limiter = RateLimiter()
        #expect(limiter.admit(key: "slow", rate: 0.1, now: at(0)) == nil)  // a burst of at least one
        #expect(limiter.admit(key: "slow", rate: 0.1, now: at(0)) == 10)
        #expect(limiter.admit(key: "other", rate: 0.1, now: at(0)) == nil)
        #expect(limiter.admit(key: "slow", rate: 0.1, now: at(10)) == nil)
    }

    @Test func aKeyWithNoRateIsAlwaysToldToWait() {
        let limiter = RateLimiter()
        #expect(limiter.admit(key: "none", rate: 0, now: at(0)) == 1)
        #expect(limiter.admit(key: "none", rate: 0, now: at(3_600)) == 1)
    }
}

/// Sending through an outage as the value it is: given what sends report and the time, when
/// sending pauses, when a probe goes out, and when sending resumes.
@Suite struct UpstreamPauseTests {
    /// A whole second, so that an instant reached in steps equals the same instant reached at once.
    let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    func at(_ seconds: Double) -> Date { start + .milliseconds(Int((seconds * 1000).rounded())) }

    @Test func aFailureUpstreamPausesSendingAndTheFirstClaimAfterItIsOneProbe() {
        var pause = UpstreamPause()
        #expect(pause.claim(at: at(0)) == .batch)
        #expect(
            pause.failed(.unreachable, retryAfter: nil, at: at(0), jitter: 1) == .paused(.unreachable, until: at(1)))
        #expect(pause.cause == .unreachable)
        #expect(!pause.mayStart(at: at(0.5)), "nothing claimed earlier starts during the pause")
        #expect(pause.claim(at: at(0.5)) == .nothing)
        #expect(pause.resumesAt(at(0.5)) == at(1))
        #expect(pause.claim(at: at(1)) == .probe)
        #expect(pause.mayStart(at: at(1)), "the probe starts")
        #expect(pause.claim(at: at(1)) == .nothing, "one probe at a time")
        #expect(pause.answered() == .resumed(after: .unreachable))
        #expect(pause.claim(at: at(1.1)) == .batch)
        #expect(pause.cause == nil)
    }

    @Test func eachProbeThatMeetsTheCauseDoublesThePauseUpToThirtySeconds() {
        var pause = UpstreamPause()
        var now = 0.0
        #expect(pause.failed(.unreachable, retryAfter: nil, at: at(now), jitter: 1) != nil)
        var lengths: [Double] = []
        for _ in 0..<8 {
            guard case .paused(let until, probe: true) = pause.state else {
                Issue.record("not paused")
                return
            }
            now = (until - start).seconds
            #expect(pause.claim(at: at(now)) == .probe)
            guard case .stillPaused(_, let next)? = pause.failed(.unreachable, retryAfter: nil, at: at(now), jitter: 1)
            else {
                Issue.record("a failed probe did not pause again")
                return
            }
            lengths.append((next - at(now)).seconds.rounded())
        }
        #expect(lengths == [2, 4, 8, 16, 30, 30, 30, 30])
        // An answer resets the back-off.
        guard case .paused(let until, probe: true) = pause.state else {
            Issue.record("not paused")
            return
        }
        #expect(pause.claim(at: until) == .probe)
        _ = pause.answered()
        #expect(
            pause.failed(.serverError, retryAfter: nil, at: until, jitter: 1)
                == .paused(.serverError, until: until + .seconds(1)))
    }

    @Test func retryAfterIsHonouredUpToAnHourAndJitterSpreadsThePause() {
        var early = UpstreamPause()
        #expect(
            early.failed(.serverError, retryAfter: .seconds(2), at: at(0), jitter: 0.8)
                == .paused(.serverError, until: at(2)), "never sooner than APNs asked")
        var pause = UpstreamPause()
        #expect(
            pause.failed(.serverError, retryAfter: .seconds(120), at: at(0), jitter: 1)
                == .paused(.serverError, until: at(120)))
        var capped = UpstreamPause()
        #expect(
            capped.failed(.serverError, retryAfter: .seconds(86_400), at: at(0), jitter: 1)
                == .paused(.serverError, until: at(3_600)))
        var spread = UpstreamPause()
        #expect(
            spread.failed(.unreachable, retryAfter: nil, at: at(0), jitter: 1.2)
                == .paused(.unreachable, until: at(1.2)))
    }

    /// APNs said when to come back: no probe, sending resumes then; each time it says so again
    /// the pause is what it says, not doubled, and its first answer ends the outage.
    @Test func whenAPNsNamesThePausesEndSendingResumesThen() {
        var pause = UpstreamPause()
        #expect(
            pause.failed(.serverError, retryAfter: .seconds(2), at: at(0), jitter: 1)
                == .paused(.serverError, until: at(2)))
        #expect(pause.claim(at: at(1.9)) == .nothing)
        #expect(pause.claim(at: at(2)) == .batch)
        #expect(pause.claim(at: at(2)) == .batch, "every sender claims again, not one probe")
        #expect(
            pause.failed(.serverError, retryAfter: .seconds(2), at: at(2.5), jitter: 1)
                == .stillPaused(.serverError, until: at(4.5)))
        #expect(pause.claim(at: at(4.5)) == .batch)
        #expect(pause.answered() == .resumed(after: .serverError))
        #expect(pause.pauses == 0)
        // Without Retry-After the end is unknown again: a probe.
        _ = pause.failed(.serverError, retryAfter: nil, at: at(5), jitter: 1)
        #expect(pause.claim(at: at(6)) == .probe)
    }

    @Test func failuresOfSendsAlreadyOutDoNotLengthenThePauseButALongerRetryAfterDoes() {
        var pause = UpstreamPause()
        _ = pause.failed(.unreachable, retryAfter: nil, at: at(0), jitter: 1)
        for _ in 0..<100 { #expect(pause.failed(.unreachable, retryAfter: nil, at: at(0.1), jitter: 1) == nil) }
        #expect(pause.state == .paused(until: at(1), probe: true))
        #expect(pause.pauses == 1)
        #expect(pause.failed(.serverError, retryAfter: .seconds(5), at: at(0.2), jitter: 1) == nil)
        #expect(pause.state == .paused(until: at(5.2), probe: true))
    }

    @Test func aProbeWithoutAVerdictIsFollowedByAnotherAtOnce() {
        var pause = UpstreamPause()
        _ = pause.failed(.credentials, retryAfter: nil, at: at(0), jitter: 1)
        #expect(pause.claim(at: at(1)) == .probe)
        pause.probeEnded(at: at(1.5))  // it found nothing queued, or its device-send had expired
        #expect(pause.claim(at: at(1.5)) == .probe)
        #expect(pause.cause == .credentials)
        pause.probeEnded(at: at(2))
        #expect(pause.answered() == .resumed(after: .credentials))
        pause.probeEnded(at: at(3))
        #expect(pause.state == .sending, "only a probe out is ended")
    }

    @Test func anAnswerWhileSendingChangesNothing() {
        var pause = UpstreamPause()
        #expect(pause.answered() == nil)
        #expect(pause.state == .sending)
    }
}

/// Which failures are upstream (they pause sending and spend no attempt) and which belong to the
/// device-send.
@Suite struct UpstreamCauseTests {
    static func rejected(_ status: Int, _ reason: APNsRejection.Reason?) -> Result<APNsResponse, APNsError> {
        var body: [UInt8] = []
        if let reason { body = Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8) }
        return .failure(.rejected(APNsRejection(status: status, body: body)))
    }
    static func transport(_ kind: TransportError.Kind, _ delivery: Delivery) -> Result<APNsResponse, APNsError> {
        .failure(.transport(TransportError(kind: kind, delivery: delivery, message: "test")))
    }

    @Test func causesUpstream() {
        for kind in [TransportError.Kind.dns, .connect, .tls, .proxy, .notHTTP2, .circuitOpen, .timeout, .other] {
            #expect(UpstreamCause.of(Self.transport(kind, .notSent)) == .unreachable, "\(kind)")
        }
        #expect(UpstreamCause.of(Self.rejected(503, .serviceUnavailable)) == .serverError)
        #expect(UpstreamCause.of(Self.rejected(500, .internalServerError)) == .serverError)
        #expect(UpstreamCause.of(Self.rejected(503, .shutdown)) == .serverError)
        #expect(UpstreamCause.of(Self.rejected(502, nil)) == .serverError)
        for reason in [
            APNsRejection.Reason.invalidProviderToken, .badCertificate, .badCertificateEnvironment,
            .badEnvironmentKeyInToken, .forbidden, .expiredProviderToken, .tooManyProviderTokenUpdates,
            .unrelatedKeyIdInToken,
        ] {
            #expect(UpstreamCause.of(Self.rejected(reason.defaultStatus, reason)) == .credentials, "\(reason)")
        }
    }

    @Test func failuresOfTheDeviceSendItself() {
        #expect(UpstreamCause.of(.success(APNsResponse(status: 200))) == nil)
        for reason in [
            APNsRejection.Reason.badDeviceToken, .unregistered, .deviceTokenNotForTopic, .tooManyRequests,
            .payloadTooLarge, .topicDisallowed,
        ] {
            #expect(UpstreamCause.of(Self.rejected(reason.defaultStatus, reason)) == nil, "\(reason)")
        }
        // It may have been delivered: final, whatever the cause.
        #expect(UpstreamCause.of(Self.transport(.connectionLost, .unknown)) == nil)
        #expect(UpstreamCause.of(Self.transport(.timeout, .unknown)) == nil)
        // This sender stopping.
        #expect(UpstreamCause.of(Self.transport(.cancelled, .notSent)) == nil)
        #expect(UpstreamCause.of(Self.transport(.shutDown, .notSent)) == nil)
    }
}
