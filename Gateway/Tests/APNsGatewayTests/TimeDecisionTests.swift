@testable import APNsGateway
import Testing

/// The sender's lease and the API's rate limit as the values they are: given the time and the
/// events, every transition is checked without a database, a socket or a wait. (LeaseTests drives
/// the same lease through real stores and senders; GatewayAPITests the limit through the API.) The
/// one clock read is the origin the instants are counted from; no decision reads the clock.
@Suite struct SenderLeaseTests {
    let start = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

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
    let start = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    @Test func aNewKeyMayBurstToTwiceItsRateThenWaitsForTheNextToken() {
        let limiter = RateLimiter()
        for _ in 0..<4 { #expect(limiter.admit(key: "k", rate: 2, now: at(0)) == nil) }
        #expect(limiter.admit(key: "k", rate: 2, now: at(0)) == 0.5)
        #expect(limiter.admit(key: "k", rate: 2, now: at(0.25)) == 0.25, "the wait shrinks as the bucket refills")
        #expect(limiter.admit(key: "k", rate: 2, now: at(0.5)) == nil)
        #expect(limiter.admit(key: "k", rate: 2, now: at(0.5)) == 0.5)
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
