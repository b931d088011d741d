/// An exponential back-off: `initial` before the first retry, doubling before each later one up
/// to `maximum`, each delay varied at random by up to ±`jitter` (a fraction), so that many
/// senders that failed together do not come back together.
///
/// The one back-off of swift-apns: a send's retries (``RetryPolicy``), the circuit breaker's
/// cool-down (``CircuitBreakerPolicy``), the transport's reconnections, and, for code that runs
/// its own loop (a queue worker), requeues and pauses, as the push gateway's dispatcher does.
///
/// ```swift
/// let backoff = Backoff(initial: .seconds(1), maximum: .seconds(60))
/// try await Task.sleep(for: backoff.delay(beforeRetry: failures))   // 1 s, 2 s, 4 s, … 60 s (±20 %)
/// ```
///
/// Thread safety: a value; `Sendable`.
public struct Backoff: Sendable, Hashable {
    /// The delay before the first retry.
    public var initial: Duration
    /// The longest delay, before jitter.
    public var maximum: Duration
    /// How much each delay varies at random, as a fraction from 0 to 1 (0.2 = ±20 %).
    public var jitter: Double

    /// A back-off from `initial`, doubling up to `maximum`, varied by ±`jitter`.
    public init(initial: Duration, maximum: Duration, jitter: Double = 0.2) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The delay before retry number `retry` (1 for the first), varied at random within ±``jitter``.
    public func delay(beforeRetry retry: Int) -> Duration {
        let jitter = Swift.min(Swift.max(jitter, 0), 1)
        return delay(beforeRetry: retry, factor: jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter)) : 1)
    }

    /// The delay before retry number `retry`, times `factor` instead of a random one: for a
    /// decision tested with a given factor (1 for the delay before jitter).
    ///
    /// Whatever the values, nothing overflows: the delay is at most ``maximum`` and at most 24
    /// hours (`TransportConfiguration.maximumDuration`), before a factor of at most 2.
    public func delay(beforeRetry retry: Int, factor: Double) -> Duration {
        let ceiling = Swift.min(maximum, TransportConfiguration.maximumDuration)
        var delay = Swift.max(Swift.min(initial, ceiling), .zero)
        // At most 63 doublings: any delay reaches its ceiling long before, and a huge `retry` costs
        // no more than a small one.
        for _ in 1..<Swift.max(1, Swift.min(retry, 64)) where delay < ceiling {
            delay = delay > ceiling / 2 ? ceiling : delay * 2
        }
        let factor = factor.isFinite ? Swift.min(Swift.max(factor, 0), 2) : 1
        return factor == 1 ? delay : delay.scaled(by: factor)
    }
}
