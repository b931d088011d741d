/// When keep-warm opens (or checks) a connection ahead of sends, as a value given the time and
/// what happened: the loop asks ``isDue(now:lastActivity:maximumIdle:awaitingConnection:stirred:)``
/// when nothing else would touch the connection, and reports each warm-up's end; the schedule
/// answers when the next may start. `KeepWarmScheduleTests` checks every rule with instants, no
/// connection and no wait; `KeepWarmTests` drives the same schedule through libcurl.
///
/// Thread safety: a value; the loop keeps its one copy on the loop thread.
struct KeepWarmSchedule: Equatable {
    /// The least time between two warm-ups, so a socket that stays readable cannot make the loop
    /// spin on them.
    static let spacing: Duration = .milliseconds(250)
    /// The longest wait after failures: one minute.
    static let maximumBackOff: Duration = .seconds(60)
    /// libcurl refuses to reuse a connection idle for more than its maximum idle time (whole
    /// seconds); keep-warm replaces it this much later, while nothing waits for it.
    static let idleMargin: Duration = .seconds(2)

    /// No warm-up starts before this.
    private(set) var notBefore: ContinuousClock.Instant
    /// Warm-ups that failed in a row since the last that reached a ready connection.
    private(set) var failures = 0

    init(startingAt now: ContinuousClock.Instant) { notBefore = now }

    /// Whether a warm-up should start at `now`: its spacing or back-off is over, and a connection
    /// is wanted (none is ready), the idle one stirred (a GOAWAY, a close, a keepalive failure,
    /// which libcurl does not watch for on idle connections), or the idle one is about to be too
    /// old for libcurl to reuse.
    func isDue(
        now: ContinuousClock.Instant, lastActivity: ContinuousClock.Instant, maximumIdle: Duration,
        awaitingConnection: Bool, stirred: Bool
    ) -> Bool {
        guard now >= notBefore else { return false }
        let tooOld = now - lastActivity > maximumIdle + Self.idleMargin
        return awaitingConnection || stirred || tooOld
    }

    /// A warm-up reached a ready connection at `now`: the failures are forgotten and the next
    /// may start after the spacing.
    mutating func succeeded(at now: ContinuousClock.Instant) {
        failures = 0
        notBefore = now + Self.spacing
    }

    /// A warm-up failed at `now`: the next waits one second, doubling with each failure in a row
    /// up to a minute, times `jitter` (the loop draws it from 0.8...1.2, so that many processes
    /// that lost APNs together do not come back together). Returns the wait.
    @discardableResult
    mutating func failed(at now: ContinuousClock.Instant, jitter: Double) -> Duration {
        failures += 1
        let backOff = min(Self.maximumBackOff, .seconds(1) * (1 << min(failures - 1, 6)))
        let delay = backOff * jitter
        notBefore = now + delay
        return delay
    }
}
