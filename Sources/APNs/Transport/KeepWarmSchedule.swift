/// When keep-warm opens (or checks) a connection ahead of sends, as a value given the time and
/// what happened: the loop asks ``reason(now:lastActivity:maximumIdle:awaitingConnection:stirred:)``
/// when nothing else would touch the connection, and reports each warm-up's start and end and
/// each send's start; the schedule answers when the next may start and why.
/// `KeepWarmScheduleTests` checks every rule with instants, no connection and no wait;
/// `KeepWarmTests` and `IdleConnectionTests` drive the same schedule through libcurl.
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
    /// An idle connection was already replaced since the last send: the replacement is not
    /// replaced in turn (Apple asks providers not to open and close connections rapidly); if it
    /// stays idle too long, the next send finds libcurl retiring it and opens a new one.
    private(set) var replacedWhileIdle = false

    init(startingAt now: ContinuousClock.Instant) { notBefore = now }

    /// Why a warm-up starts.
    enum Reason: Equatable {
        /// No connection is ready (none opened yet, or the last one closed, went away or stalled).
        case noConnection
        /// The idle connection's socket stirred (a GOAWAY, a close, a keepalive failure), which
        /// libcurl does not watch for on idle connections.
        case stirred
        /// The idle connection is about to be too old for libcurl to reuse: replaced once per idle
        /// period.
        case idleTooLong
    }

    /// Whether a warm-up should start at `now`, and why: its spacing or back-off is over, and a
    /// connection is wanted, the idle one stirred, or the idle one is too old to reuse and has not
    /// been replaced since the last send.
    func reason(
        now: ContinuousClock.Instant, lastActivity: ContinuousClock.Instant, maximumIdle: Duration,
        awaitingConnection: Bool, stirred: Bool
    ) -> Reason? {
        guard now >= notBefore else { return nil }
        if awaitingConnection { return .noConnection }
        if stirred { return .stirred }
        if !replacedWhileIdle, now - lastActivity > maximumIdle + Self.idleMargin { return .idleTooLong }
        return nil
    }

    /// ``reason(now:lastActivity:maximumIdle:awaitingConnection:stirred:)`` is not nil.
    func isDue(
        now: ContinuousClock.Instant, lastActivity: ContinuousClock.Instant, maximumIdle: Duration,
        awaitingConnection: Bool, stirred: Bool
    ) -> Bool {
        reason(
            now: now, lastActivity: lastActivity, maximumIdle: maximumIdle, awaitingConnection: awaitingConnection,
            stirred: stirred) != nil
    }

    /// A warm-up starts for `reason`.
    mutating func starting(for reason: Reason) {
        if reason == .idleTooLong { replacedWhileIdle = true }
    }

    /// A send started: the idle period is over, and the next may replace its connection again.
    mutating func sendStarted() {
        replacedWhileIdle = false
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
        let delay = Backoff(initial: .seconds(1), maximum: Self.maximumBackOff).delay(
            beforeRetry: failures, factor: jitter)
        notBefore = now + delay
        return delay
    }
}
