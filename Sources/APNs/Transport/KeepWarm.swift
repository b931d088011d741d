/// Keep-warm's state on the loop (``CurlMultiLoop/keepWarm(origin:)``): the origin to keep a
/// connection to, the warm-up transfer in flight, its ``KeepWarmSchedule``, whether an idle
/// connection's socket stirred, and when the last transfer in flight ended (where an idle period
/// starts: libcurl refuses to reuse a connection idle for longer than `maximumIdleSeconds`, and
/// keep-warm replaces it).
///
/// It owns those fields and takes the loop's events — a send started, the last transfer ended,
/// an idle socket stirred, a warm-up ended — and answers what to do: whether a warm-up starts
/// now, and how the loop's sleep should watch for the next. The loop makes the warm-up transfer,
/// starts it in libcurl and logs; this value reads no clock and touches no socket.
/// `KeepWarmStateTests` checks it with instants; `KeepWarmTests` drives it through libcurl.
///
/// Thread safety: none; the loop thread alone uses it. Its stored properties are
/// `@exclusivity(unchecked)` for the reason the loop's are: one thread, and no access overlaps
/// another (``sendStarted()`` runs once per push).
final class KeepWarm {
    /// The origin a warm-up asks for `/` of (its host is what counts: nothing is ever written);
    /// nil until keep-warm is asked for.
    @exclusivity(unchecked) private(set) var origin: String?
    /// The warm-up in flight, if any.
    @exclusivity(unchecked) private(set) var warmUp: Transfer?
    @exclusivity(unchecked) private(set) var schedule: KeepWarmSchedule
    /// An idle connection's socket became readable (a GOAWAY, a close, a keepalive failure):
    /// libcurl does not watch idle connections, so a warm-up makes it look.
    @exclusivity(unchecked) private(set) var stirred = false
    /// When the last transfer in flight ended.
    @exclusivity(unchecked) private(set) var lastActivity: ContinuousClock.Instant

    init(startingAt now: ContinuousClock.Instant) {
        schedule = KeepWarmSchedule(startingAt: now)
        lastActivity = now
    }

    /// From now on, keep a connection to `origin` open.
    func keep(origin: String) { self.origin = origin }

    /// A send started: the idle period is over.
    func sendStarted() { schedule.sendStarted() }

    /// The last transfer in flight ended at `now`: an idle period starts.
    func activityEnded(at now: ContinuousClock.Instant) { lastActivity = now }

    /// An idle connection's socket stirred.
    func idleConnectionStirred() { stirred = true }

    /// Whether a warm-up starts now, why, and to which origin; nil when none does. `busy`: a
    /// transfer is in libcurl or waits for room (it touches the connection itself). The time is
    /// read only when the rest allows a warm-up (the loop asks every pass). A warm-up that starts
    /// is taken as started: ``started(_:)`` follows.
    func warmUpDue(
        at now: @autoclosure () -> ContinuousClock.Instant, busy: Bool, maximumIdle: Duration,
        awaitingConnection: Bool
    ) -> (reason: KeepWarmSchedule.Reason, origin: String, at: ContinuousClock.Instant)? {
        guard let origin, warmUp == nil, !busy else { return nil }
        let now = now()
        guard
            let reason = schedule.reason(
                now: now, lastActivity: lastActivity, maximumIdle: maximumIdle,
                awaitingConnection: awaitingConnection, stirred: stirred)
        else { return nil }
        schedule.starting(for: reason)
        stirred = false
        return (reason, origin, now)
    }

    /// The warm-up the loop made for ``warmUpDue(at:busy:maximumIdle:awaitingConnection:)``.
    func started(_ transfer: Transfer) { warmUp = transfer }

    /// The warm-up ended at `now` (nil: it reached a ready connection). After a failure of its
    /// own (not a cancellation or shutdown) the next waits out the back-off, times `jitter`:
    /// returns that wait, and the failures in a row, for the log.
    func ended(
        _ failure: TransportError?, at now: ContinuousClock.Instant, jitter: Double
    ) -> (delay: Duration, failures: Int)? {
        warmUp = nil
        lastActivity = now
        guard let failure else {
            schedule.succeeded(at: now)
            return nil
        }
        if failure.kind == .cancelled || failure.kind == .shutDown { return nil }
        let delay = schedule.failed(at: now, jitter: jitter)
        return (delay, schedule.failures)
    }

    /// How the loop's sleep at `now` serves keep-warm, while it runs and nothing is in flight:
    /// wake up by the next warm-up's time (`wakeBy`), and, once that time has come, watch the idle
    /// connections' sockets too (`watchIdleSockets`), so one that stirs starts a warm-up at once.
    func sleepPlan(
        at now: ContinuousClock.Instant, running: Bool, busy: Bool
    )
        -> (wakeBy: ContinuousClock.Instant?, watchIdleSockets: Bool)
    {
        guard origin != nil, running, warmUp == nil, !busy else { return (nil, false) }
        let next = schedule.notBefore
        return next > now ? (next, false) : (nil, true)
    }
}
