import Foundation

/// The time the dispatcher decides and waits by: registration, heartbeats and leases, pauses and
/// their probes, requeues, the outcome writes' pace, the retention's prune and the poll.
///
/// One kind of time, the wall clock's `Date`: what the dispatcher decides locally is compared with
/// what the queue stores (claims' leases, due times, heartbeats), which other instances write
/// from their own wall clocks. The gateway runs on ``SystemGatewayClock``; a test gives one it
/// advances itself (`Dispatcher.Configuration.clock`), so a lease running out or a pause ending is
/// a step the test takes, not seconds it sleeps.
///
/// The library's own time inside a send (its deadline, libcurl's timeouts) is not this clock's.
public protocol GatewayClock: Sendable {
    /// The present.
    var now: Date { get }
    /// Returns once `duration` has passed on this clock, or throws `CancellationError` when the
    /// waiting task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's clock: `Date()`, and `Task.sleep` for waits.
///
/// Thread safety: stateless; `Sendable`.
public struct SystemGatewayClock: GatewayClock {
    public init() {}
    public var now: Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

extension Date {
    /// This date moved on by `duration`.
    static func + (date: Date, duration: Duration) -> Date { date.addingTimeInterval(duration.seconds) }
    /// This date moved back by `duration`.
    static func - (date: Date, duration: Duration) -> Date { date.addingTimeInterval(-duration.seconds) }
    /// The time from `earlier` to `later` (negative when `later` is earlier).
    static func - (later: Date, earlier: Date) -> Duration { .seconds(later.timeIntervalSince(earlier)) }
}
