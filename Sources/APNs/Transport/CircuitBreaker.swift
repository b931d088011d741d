/// When to stop trying: after `failureThreshold` consecutive sends fail in a way the next would
/// repeat — the host does not resolve, refuses the connection or the TLS handshake, or APNs refuses
/// the credentials (403 with a token or certificate reason) — the connector fails sends at once,
/// without the network (``TransportError/Kind-swift.struct/circuitOpen``, never sent), and lets one
/// send through as a probe after a cool-down that doubles with each failed probe (with ±20 %
/// jitter), up to `maximumCoolDown`. A probe that gets any other answer closes the circuit.
///
/// ```swift
/// let transport = TransportConfiguration(circuitBreaker: CircuitBreakerPolicy(failureThreshold: 3))
/// let noBreaker = TransportConfiguration(circuitBreaker: nil)
/// ```
public struct CircuitBreakerPolicy: Sendable, Hashable {
    /// Consecutive failing sends that open the circuit (5).
    public var failureThreshold: Int
    /// The first cool-down before a probe (1 s).
    public var initialCoolDown: Duration
    /// The longest cool-down (60 s).
    public var maximumCoolDown: Duration

    /// When to fail fast: after `failureThreshold` failures in a row, for a cool-down that doubles from `initialCoolDown` up to `maximumCoolDown`.
    public init(
        failureThreshold: Int = 5, initialCoolDown: Duration = .seconds(1), maximumCoolDown: Duration = .seconds(60)
    ) {
        self.failureThreshold = failureThreshold
        self.initialCoolDown = initialCoolDown
        self.maximumCoolDown = maximumCoolDown
    }
}

/// The breaker's state machine, given the time with every event (tested with a test clock).
///
/// Thread safety: not `Sendable`; the transport's loop thread owns it. A class, not a struct: the
/// loop asks it on every send and every outcome, and reading a struct with a string in it through
/// the loop's optional copied (and retained) the whole value each time. Its state is
/// `@exclusivity(unchecked)` as the loop's is: one thread, no overlapping access.
final class CircuitBreaker {
    enum Admission {
        case go
        /// The first send after a cool-down: its outcome decides.
        case probe
        case reject(TransportError)
    }

    /// What a finished send says about the path to APNs.
    enum Signal {
        case healthy
        case failing(String)
        case neutral
    }

    private enum State {
        case closed
        case open(until: ContinuousClock.Instant)
        case probing
    }

    let policy: CircuitBreakerPolicy
    @exclusivity(unchecked) private var state = State.closed
    @exclusivity(unchecked) private var consecutiveFailures = 0
    /// Failed probes since the circuit last closed: the cool-down doubles with each.
    @exclusivity(unchecked) private var failedProbes = 0
    @exclusivity(unchecked) private(set) var lastFailure = ""
    @exclusivity(unchecked) private(set) var trips = 0

    /// Whether sends go through without a probe.
    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Closed with no failure counted: a healthy signal changes nothing (the common case, checked
    /// first so a success costs no clock read and no write).
    var isSteady: Bool { isClosed && consecutiveFailures == 0 && failedProbes == 0 }

    /// The cool-down of an open circuit: how long from when it opened until a probe.
    @exclusivity(unchecked) private(set) var coolDown: Duration?

    init(policy: CircuitBreakerPolicy) { self.policy = policy }

    func admit(now: ContinuousClock.Instant) -> Admission {
        switch state {
        case .closed:
            return .go
        case .open(let until) where now >= until:
            state = .probing
            return .probe
        case .open(let until):
            return .reject(rejection(retryIn: until - now))
        case .probing:
            return .reject(rejection(retryIn: nil))
        }
    }

    func record(_ signal: Signal, probe: Bool, now: ContinuousClock.Instant) {
        switch signal {
        case .healthy:
            consecutiveFailures = 0
            failedProbes = 0
            state = .closed
        case .failing(let description):
            lastFailure = description
            consecutiveFailures += 1
            if probe {
                failedProbes += 1
                open(now: now)
            } else if case .closed = state, consecutiveFailures >= policy.failureThreshold {
                open(now: now)
            }
        case .neutral:
            // A probe that ended without an answer (a timeout, a cancellation) proves nothing: try
            // again after another cool-down.
            if probe { open(now: now) }
        }
    }

    private func open(now: ContinuousClock.Instant) {
        trips += 1
        let coolDown = Backoff(initial: policy.initialCoolDown, maximum: policy.maximumCoolDown)
            .delay(beforeRetry: failedProbes + 1)
        self.coolDown = coolDown
        state = .open(until: now + coolDown)
    }

    private func rejection(retryIn: Duration?) -> TransportError {
        var message =
            "the circuit breaker is open after \(consecutiveFailures) consecutive failures (last: \(lastFailure))"
        if let retryIn {
            message += "; the next probe is in about \(max(1, Int(retryIn.components.seconds) + 1)) s"
        } else {
            message += "; a probe is under way"
        }
        return TransportError(kind: .circuitOpen, delivery: .notSent, message: message)
    }

    /// What a finished send says: connection set-up failures and refused credentials count against
    /// the path; any other answer from APNs is healthy; everything else is neutral.
    static func signal(for result: Result<APNsHTTPResponse, any Error>) -> Signal {
        switch result {
        case .success(let response):
            if response.status == 403, let reason = APNsRejection(response).reason, reason.refusesTheCredential {
                return .failing("403 \(reason.rawValue)")
            }
            return .healthy
        case .failure(let error as TransportError):
            switch error.kind {
            case .dns, .connect, .tls, .proxy: return .failing("\(error.kind): \(error.message)")
            default: return .neutral
            }
        case .failure:
            return .neutral
        }
    }
}
