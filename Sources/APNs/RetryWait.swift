import Foundation

/// The clock a send's own waits run on: the wait before a retry (``RetryPolicy``), and the "now"
/// its deadline and the decision to retry are counted from.
///
/// swift-apns' connectors use ``ContinuousWaitClock``; a test gives a connector one it advances
/// itself (`TransportConfiguration.waitClock`), so a retry's back-off is a step the test takes,
/// not a second it sleeps. The transport's loop decides on it too: deadlines, keep-warm's
/// schedule, the breaker's cool-down, stalls, the grace period (`CurlMultiLoop.clock`). libcurl's
/// own timing (connects, its timer, a connection's idle age) stays on the real clock: it is
/// libcurl's, not ours.
///
/// A class, so that a configuration that carries one stays `Hashable` (by identity).
package protocol WaitClock: AnyObject, Sendable {
    /// The present, on the continuous clock's scale: a send's deadline is an instant of it.
    var now: ContinuousClock.Instant { get }
    /// Returns at `instant`, or throws `CancellationError` when the waiting task is cancelled.
    func sleep(until instant: ContinuousClock.Instant) async throws
    /// Calls `action`, from any thread, each time the clock's time jumps ahead (a test's clock,
    /// advanced): the transport's loop, asleep until a time of this clock, looks again. The real
    /// clock never jumps.
    func whenAdvanced(_ action: @escaping @Sendable () -> Void)
    /// The calendar time, for what is judged against a date (a certificate's expiry).
    var date: Date { get }
}

extension WaitClock {
    /// A clock that never jumps calls nothing.
    package func whenAdvanced(_ action: @escaping @Sendable () -> Void) {}
    /// The system's calendar time, unless the clock keeps its own.
    package var date: Date { Date() }
}

/// The real clock: `ContinuousClock`.
///
/// Thread safety: stateless; `Sendable`.
package final class ContinuousWaitClock: WaitClock {
    package static let shared = ContinuousWaitClock()
    private init() {}
    package var now: ContinuousClock.Instant { .now }
    package func sleep(until instant: ContinuousClock.Instant) async throws {
        try await ContinuousClock().sleep(until: instant, tolerance: nil)
    }
}

/// A ``WaitClock`` held by a `Hashable` value: two are equal when they hold the same clock.
package struct WaitClockReference: Sendable, Hashable {
    package let clock: any WaitClock
    package init(_ clock: any WaitClock) { self.clock = clock }
    package static func == (lhs: WaitClockReference, rhs: WaitClockReference) -> Bool { lhs.clock === rhs.clock }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(clock)) }
}

extension RetryPolicy {
    /// Waits `delay` on `clock` before the next attempt of a send whose last attempt failed with
    /// `failure`: nil when the wait ran its course (send again), else the failure the send ends
    /// with because the wait was cancelled (``endingCancelledWait(after:)``).
    ///
    /// The one wait before a retry, for every send path: a single send's loop and a bulk send's
    /// device (whose wait is cancelled with its bulk send, `TransferGroup`). A function of its own,
    /// so its frame is allocated only by a send that retries.
    static func waitToRetry(after delay: Duration, failure: APNsError, on clock: any WaitClock) async -> APNsError? {
        do {
            try await clock.sleep(until: clock.now + delay)
            return nil
        } catch {
            return endingCancelledWait(after: failure)
        }
    }

    /// What a send whose wait before a retry was cancelled ends with: the earlier attempt's
    /// failure when it may have been delivered (its honest delivery stands: the cancelled wait
    /// sent nothing more), else a cancellation that sent nothing.
    package static func endingCancelledWait(after failure: APNsError) -> APNsError {
        failure.mayHaveBeenDelivered ? failure : .transport(.cancelled(delivery: .notSent))
    }
}
