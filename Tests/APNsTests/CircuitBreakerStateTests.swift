@testable import APNs
import Testing

/// The circuit breaker as the value it is: given the time and each send's signal, every transition
/// is checked without a connector, a socket or a wait. (CircuitBreakerTests drives the same breaker
/// through libcurl against unreachable and refusing servers.) The one clock read is the origin the
/// instants are counted from; no decision reads the clock.
@Suite struct CircuitBreakerStateTests {
    let start = ContinuousClock.now
    let policy = CircuitBreakerPolicy(failureThreshold: 3, initialCoolDown: .seconds(1), maximumCoolDown: .seconds(4))

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    func isGo(_ admission: CircuitBreaker.Admission) -> Bool {
        if case .go = admission { return true }
        return false
    }

    func isProbe(_ admission: CircuitBreaker.Admission) -> Bool {
        if case .probe = admission { return true }
        return false
    }

    func rejection(_ admission: CircuitBreaker.Admission) -> TransportError? {
        if case .reject(let error) = admission { return error }
        return nil
    }

    /// The breaker after `threshold` failures at time 0: open.
    func tripped() -> CircuitBreaker {
        let breaker = CircuitBreaker(policy: policy)
        for _ in 0..<policy.failureThreshold { breaker.record(.failing("dns: no such host"), probe: false, now: at(0)) }
        return breaker
    }

    @Test func failuresBelowTheThresholdKeepItClosed() {
        let breaker = CircuitBreaker(policy: policy)
        #expect(breaker.isSteady)
        breaker.record(.failing("connect: refused"), probe: false, now: at(0))
        breaker.record(.failing("connect: refused"), probe: false, now: at(0))
        #expect(breaker.isClosed && !breaker.isSteady)
        #expect(isGo(breaker.admit(now: at(0))))
        // An answer from APNs resets the count: two more failures still do not open it.
        breaker.record(.healthy, probe: false, now: at(1))
        #expect(breaker.isSteady)
        breaker.record(.failing("connect: refused"), probe: false, now: at(1))
        breaker.record(.failing("connect: refused"), probe: false, now: at(1))
        #expect(breaker.isClosed && breaker.trips == 0)
        // Neutral outcomes (a timeout) neither count nor reset.
        breaker.record(.neutral, probe: false, now: at(1))
        breaker.record(.failing("connect: refused"), probe: false, now: at(1))
        #expect(!breaker.isClosed && breaker.trips == 1)
    }

    @Test func theThresholdOpensItAndSendsFailFastUntilTheCoolDown() throws {
        let breaker = tripped()
        #expect(!breaker.isClosed && breaker.trips == 1)
        let coolDown = try #require(breaker.coolDown)
        #expect(coolDown >= .milliseconds(800) && coolDown <= .milliseconds(1200))  // 1 s ± 20 %
        let refused = try #require(rejection(breaker.admit(now: at(0.5))))
        #expect(refused.kind == .circuitOpen && refused.delivery == .notSent)
        #expect(refused.message.contains("after 3 consecutive failures (last: dns: no such host)"))
        #expect(refused.message.contains("the next probe is in about 1 s"))
        // At the end of the cool-down one send goes through as the probe; the rest still fail fast.
        #expect(isProbe(breaker.admit(now: start + coolDown)))
        let during = try #require(rejection(breaker.admit(now: start + coolDown)))
        #expect(during.message.hasSuffix("; a probe is under way"))
    }

    @Test func aHealthyProbeClosesIt() throws {
        let breaker = tripped()
        let coolDown = try #require(breaker.coolDown)
        #expect(isProbe(breaker.admit(now: start + coolDown)))
        breaker.record(.healthy, probe: true, now: start + coolDown)
        #expect(breaker.isSteady)
        #expect(isGo(breaker.admit(now: start + coolDown)))
    }

    @Test func eachFailedProbeDoublesTheCoolDownUpToTheMaximum() throws {
        let breaker = tripped()
        var now = start
        // Cool-downs 1, 2, 4, then capped at 4 (each ± 20 %).
        for expected in [2.0, 4.0, 4.0, 4.0] {
            let waited = try #require(breaker.coolDown)
            now = now + waited
            #expect(isProbe(breaker.admit(now: now)))
            breaker.record(.failing("tls: handshake"), probe: true, now: now)
            let coolDown = try #require(breaker.coolDown)
            #expect(coolDown >= .seconds(expected * 0.8) && coolDown <= .seconds(expected * 1.2), "\(coolDown)")
        }
        #expect(breaker.trips == 5)
    }

    @Test func aProbeWithoutAnAnswerTriesAgainAfterTheSameCoolDown() throws {
        let breaker = tripped()
        let first = try #require(breaker.coolDown)
        #expect(isProbe(breaker.admit(now: start + first)))
        breaker.record(.neutral, probe: true, now: start + first)
        #expect(!breaker.isClosed)
        let again = try #require(breaker.coolDown)
        #expect(again >= .milliseconds(800) && again <= .milliseconds(1200))  // not doubled
        #expect(rejection(breaker.admit(now: start + first)) != nil)
    }

    @Test func whatCountsAgainstThePath() {
        func signal(_ result: Result<APNsHTTPResponse, any Error>) -> String {
            switch CircuitBreaker.signal(for: result) {
            case .healthy: return "healthy"
            case .failing(let description): return "failing \(description)"
            case .neutral: return "neutral"
            }
        }
        func answer(_ status: Int, _ reason: String) -> Result<APNsHTTPResponse, any Error> {
            .success(APNsHTTPResponse(status: status, headers: [], body: Array(#"{"reason":"\#(reason)"}"#.utf8)))
        }
        #expect(signal(.success(APNsHTTPResponse(status: 200, headers: []))) == "healthy")
        #expect(signal(answer(400, "BadDeviceToken")) == "healthy")
        #expect(signal(answer(410, "Unregistered")) == "healthy")
        #expect(signal(answer(403, "InvalidProviderToken")) == "failing 403 InvalidProviderToken")
        #expect(signal(answer(403, "BadCertificateEnvironment")) == "failing 403 BadCertificateEnvironment")
        // The token connector re-mints on ExpiredProviderToken: not the path's fault.
        #expect(signal(answer(403, "ExpiredProviderToken")) == "healthy")
        // Nor on UnrelatedKeyIdInToken: it refuses one connection, and the request goes on a new one.
        #expect(signal(answer(403, "UnrelatedKeyIdInToken")) == "healthy")
        let dns = TransportError(kind: .dns, delivery: .notSent, message: "no such host")
        #expect(signal(.failure(dns)) == "failing dns: no such host")
        let connect = TransportError(kind: .connect, delivery: .notSent, message: "refused")
        #expect(signal(.failure(connect)) == "failing connect: refused")
        #expect(signal(.failure(TransportError(kind: .timeout, delivery: .unknown, message: "late"))) == "neutral")
        #expect(signal(.failure(CancellationError())) == "neutral")
    }
}
