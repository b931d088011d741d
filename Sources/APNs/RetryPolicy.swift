/// When a send tries again on its own. None by default: a retry is the caller's decision, since
/// only the caller knows whether a late notification is still worth showing.
///
/// A policy retries only what cannot duplicate a notification or is Apple's advice:
/// - transport failures whose delivery is ``Delivery/notSent`` (never a ``Delivery/unknown`` one,
///   never a cancellation, a shutdown or an open circuit);
/// - 429 and 5xx rejections, no sooner than their `Retry-After`;
/// - never 400, 403, 404, 410 or 413 (ExpiredProviderToken is handled by the token connector).
///
/// Attempts back off exponentially with jitter, up to a cap, and all of them fit in the send's one
/// deadline: a retry that could not start before it is not made, and the last failure is returned.
///
/// ```swift
/// try await send(notification, via: connector, to: device, timeout: .seconds(30), retry: .standard)
/// try await send(notification, via: connector, to: device, retry: .attempts(5))
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (1 means no retry).
    public var maximumAttempts: Int
    /// The delay before the first retry; each later one doubles it.
    public var initialBackoff: Duration
    /// The longest delay between attempts.
    public var maximumBackoff: Duration
    /// How much each delay varies at random, as a fraction (0.2 = ±20 %).
    public var jitter: Double

    /// A policy of at most `maximumAttempts` attempts (the first included), backing off exponentially from `initialBackoff` to `maximumBackoff` with ±`jitter` (a fraction).
    public init(
        maximumAttempts: Int, initialBackoff: Duration = .milliseconds(200), maximumBackoff: Duration = .seconds(10),
        jitter: Double = 0.2
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.jitter = jitter
    }

    /// No retries.
    public static let none = RetryPolicy(maximumAttempts: 1)
    /// Three attempts, 200 ms then 400 ms apart (±20 %), capped at 10 s.
    public static let standard = RetryPolicy(maximumAttempts: 3)
    /// The standard back-off with `count` attempts in all.
    public static func attempts(_ count: Int) -> RetryPolicy { RetryPolicy(maximumAttempts: count) }

    /// Whether the policy can be used.
    func validate() throws(APNsError) {
        guard maximumAttempts >= 1, initialBackoff >= .zero, maximumBackoff >= initialBackoff,
            maximumBackoff <= TransportConfiguration.maximumDuration, (0...1).contains(jitter)
        else {
            throw .validation(
                .invalidTransportSetting(
                    name: "retry",
                    value:
                        "\(maximumAttempts) attempts, \(initialBackoff)…\(maximumBackoff), jitter \(jitter); use at least 1 attempt, back-offs from 0 to 24 hours with the initial one no longer than the maximum, and a jitter from 0 to 1"
                ))
        }
    }

    /// The delay before attempt `attempt + 1` after `error`, or nil when it must not be retried —
    /// for callers that run their own loop (a queue worker, say).
    ///
    /// ```swift
    /// if let wait = RetryPolicy.standard.delay(after: error, attempt: 1) { requeue(after: wait) }
    /// ```
    public func delay(after error: APNsError, attempt: Int) -> Duration? {
        guard attempt < maximumAttempts else { return nil }
        var floor = Duration.zero
        switch error {
        case .transport(let failure):
            guard failure.delivery == .notSent else { return nil }
            switch failure.kind {
            case .cancelled, .shutDown, .circuitOpen: return nil
            default: break
            }
        case .rejected(let rejection):
            guard rejection.status == 429 || (500...599).contains(rejection.status) else { return nil }
            guard rejection.reason != .tooManyProviderTokenUpdates else { return nil }  // a configuration problem
            floor = rejection.retryAfter ?? .zero
        default:
            return nil
        }
        return max(backoff.delay(beforeRetry: attempt), floor)
    }

    /// The back-off between attempts: ``initialBackoff``, doubling up to ``maximumBackoff``, ±``jitter``.
    public var backoff: Backoff { Backoff(initial: initialBackoff, maximum: maximumBackoff, jitter: jitter) }
}

extension RetryPolicy {
    /// The wait before attempt `attempt + 1` of a send whose attempt `attempt` failed with
    /// `failure`: the policy's ``delay(after:attempt:)``, when the next attempt can still start
    /// before the send's `deadline`. Nil ends the send with `failure`. The one decision every send
    /// path makes (single, channel, bulk), wherever its loop runs.
    func wait(
        after failure: APNsError, attempt: Int, deadline: ContinuousClock.Instant?, now: ContinuousClock.Instant = .now
    ) -> Duration? {
        guard let delay = delay(after: failure, attempt: attempt) else { return nil }
        if let deadline, now + delay >= deadline { return nil }
        return delay
    }
}
