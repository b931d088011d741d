import APNs
import Foundation

/// A ``WaitClock`` that never waits: each `sleep(until:)` records how long it was asked to wait
/// and returns at once; `now` stays where it started, so concurrent sleepers each record their
/// own wait. A retry's back-off becomes a value the test reads (``waits``) instead of a second it
/// sleeps.
///
/// Thread safety: `Sendable`; its state is behind a `Locked`.
final class ImmediateWaitClock: WaitClock {
    private let state: Locked<(now: ContinuousClock.Instant, waits: [Duration])>

    init() { state = Locked((ContinuousClock.now, [])) }

    var now: ContinuousClock.Instant { state.withLock { $0.now } }
    /// Every wait asked of it, in order.
    var waits: [Duration] { state.withLock { $0.waits } }

    func sleep(until instant: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        state.withLock { $0.waits.append(instant - $0.now) }
    }
}

/// A ``WaitClock`` the test advances: sleepers wait until ``advance(by:)`` passes their instant,
/// or until their task is cancelled.
///
/// Thread safety: `Sendable`; its state is behind a `Locked`, and continuations are resumed
/// outside it.
final class ManualWaitClock: WaitClock {
    private struct Sleeper {
        let until: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var next = 0
        var sleepers: [Int: Sleeper] = [:]
        var cancelled: Set<Int> = []
        var sleepWaits: [(ready: @Sendable (Int) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
        var advanced: [@Sendable () -> Void] = []
    }

    private let state = Locked(State(now: .now))
    /// The calendar time when the clock was made; ``date`` moves on with it.
    private let start = (instant: ContinuousClock.now, date: Date())

    var now: ContinuousClock.Instant { state.withLock { $0.now } }
    /// The calendar time on this clock: its start's date plus how far it was advanced.
    var date: Date {
        let elapsed = now - start.instant
        return start.date.addingTimeInterval(
            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    /// Tasks asleep on it now.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    func sleep(until instant: ContinuousClock.Instant) async throws {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (verdict, waits) = state.withLock {
                    state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if state.now >= instant { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(until: instant, continuation: continuation)
                    return (nil, Self.satisfied(&state))
                }
                for wait in waits { wait.resume() }
                if let verdict { continuation.resume(with: verdict) }
            }
        } onCancel: {
            let (sleeper, waits) = state.withLock { state -> (Sleeper?, [CheckedContinuation<Void, Never>]) in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)  // not asleep yet: the sleep ends as it starts
                    return (nil, [])
                }
                return (sleeper, Self.satisfied(&state))
            }
            sleeper?.continuation.resume(throwing: CancellationError())
            for wait in waits { wait.resume() }
        }
    }

    func whenAdvanced(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.advanced.append(action) }
    }

    /// Moves the time on by `duration`, wakes every sleeper whose instant it passes, and tells
    /// whoever asked (``whenAdvanced(_:)``: a transport's loop).
    func advance(by duration: Duration) {
        let (due, waits, advanced) = state.withLock {
            state -> ([Sleeper], [CheckedContinuation<Void, Never>], [@Sendable () -> Void]) in
            state.now += duration
            let due = state.sleepers.filter { $0.value.until <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return (Array(due.values), Self.satisfied(&state), state.advanced)
        }
        for sleeper in due { sleeper.continuation.resume() }
        for wait in waits { wait.resume() }
        for action in advanced { action() }
    }

    /// Returns once at least `count` tasks sleep on it (a suite's time limit ends a wait for a
    /// sleeper that never comes).
    func untilSleeping(_ count: Int = 1) async { await until { $0 >= count } }

    /// Returns once no task sleeps on it (its sleepers were woken or cancelled).
    func untilAwake() async { await until { $0 == 0 } }

    private func until(_ ready: @escaping @Sendable (Int) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard !ready(state.sleepers.count) else { return true }
                state.sleepWaits.append((ready, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The waits that the sleepers now asleep satisfy, taken from the state.
    private static func satisfied(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let ready = state.sleepWaits.filter { $0.ready(count) }.map(\.continuation)
        state.sleepWaits.removeAll { $0.ready(count) }
        return ready
    }
}
