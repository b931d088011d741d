import Foundation

/// Whether this sender may start a send: its lease, as the heartbeats left it, judged at a time.
///
/// A sender's claims are its own until the lease it last renewed runs out; another sender may take
/// them over after that. So a send may start only while the lease outlasts it: its deadline plus
/// one heartbeat (the next renewal may be the one that fails). The value is given each heartbeat's
/// result and the time; it reads no clock and does no I/O (``Dispatcher`` does both around it).
///
/// Thread safety: a value; the dispatcher keeps it behind a `Mutex`.
struct SenderLease: Sendable {
    enum State: Sendable, Equatable {
        /// ``Dispatcher/run()`` has not registered the sender: ``Dispatcher/dispatchOnce()``
        /// called on its own claims under each claim's lease alone, with nothing to renew it.
        case unregistered
        /// Every claim this sender holds is surely its own until then.
        case held(until: Date)
        /// Another process took the registration over (it judged this one dead): no more sends.
        case lost
    }

    /// What a judgement changed, for the log.
    enum Change: Sendable, Equatable {
        /// The lease could run out before a send started now ends: sends stop.
        case paused
        /// A renewal made it long enough again: sends go on.
        case resumed
    }

    /// How long a claim is held past its last renewal.
    let lease: Duration
    /// How long the lease must outlast a send's start: the send's deadline and one heartbeat.
    let needed: Duration
    private(set) var state = State.unregistered
    /// The last judgement's verdict.
    private(set) var isPaused = false

    init(lease: Duration, timeout: Duration, heartbeat: Duration) {
        self.lease = lease
        needed = timeout + heartbeat
    }

    /// The sender registered, or a heartbeat renewed its claims; either began at `start` (the
    /// database's lease is counted from no earlier than that). A lost registration stays lost.
    mutating func renewed(startedAt start: Date) {
        guard state != .lost else { return }
        state = .held(until: start + lease)
    }

    /// The heartbeat found the registration gone: another process took this sender's work over.
    mutating func takenOver() { state = .lost }

    /// Whether a send may start at `now`: it would end, by its deadline, before the lease could.
    func mayStart(at now: Date) -> Bool {
        switch state {
        case .unregistered: true
        case .held(let until): now + needed <= until
        case .lost: false
        }
    }

    /// The heartbeat's verdict at `now` (after its renewal succeeded, failed or hung), and whether
    /// it changed since the last one.
    mutating func judge(at now: Date) -> Change? {
        let paused = !mayStart(at: now)
        defer { isPaused = paused }
        guard paused != isPaused else { return nil }
        return paused ? .paused : .resumed
    }
}
