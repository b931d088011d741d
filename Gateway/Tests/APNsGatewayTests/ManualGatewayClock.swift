import APNsGateway
import Foundation
import Synchronization

/// A ``GatewayClock`` the test moves: `now` changes only by ``advance(by:)``, and a sleeper wakes
/// when an advance passes its end (or its task is cancelled). A dispatcher on it claims, renews and
/// requeues at the times the test sets, however busy the machine is.
///
/// Thread safety: `Sendable`; its state is behind a `Mutex`, and sleepers are resumed outside it.
final class ManualGatewayClock: GatewayClock {
    private struct Sleeper {
        let until: Date
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var next = 0
        var sleepers: [Int: Sleeper] = [:]
        var cancelled: Set<Int> = []
    }

    private let state: Mutex<State>

    init(at start: Date = Date()) { state = Mutex(State(now: start)) }

    var now: Date { state.withLock { $0.now } }

    func sleep(for duration: Duration) async throws {
        let (id, until) = state.withLock { state in
            defer { state.next += 1 }
            return (
                state.next,
                state.now.addingTimeInterval(
                    Double(duration.components.seconds)
                        + Double(duration.components.attoseconds) / 1e18)
            )
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let verdict = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if state.now >= until { return .success(()) }
                    state.sleepers[id] = Sleeper(until: until, continuation: continuation)
                    return nil
                }
                if let verdict { continuation.resume(with: verdict) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)  // not asleep yet: the sleep ends as it starts
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns once someone sleeps on this clock (it has reached its wait), yielding meanwhile: no
    /// wall-clock time is involved.
    func untilSleeping() async {
        while state.withLock({ $0.sleepers.isEmpty }) { await Task.yield() }
    }

    /// Moves the time on by `seconds` and wakes every sleeper whose end it passes.
    func advance(by seconds: TimeInterval) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.addingTimeInterval(seconds)
            let due = state.sleepers.filter { $0.value.until <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
