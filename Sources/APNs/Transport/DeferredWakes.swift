import Foundation

/// Wake-ups the transport's loop thread holds back until the end of a pass of its loop.
///
/// One pass of the loop often finishes many requests of the same bulk send. Waking the
/// bulk send's reader for each of them costs a task resumption and, most of the time, a
/// worker-thread wake-up (a futex call) per push; waking it once after the pass, for everything
/// the pass delivered, costs one. ``BulkChannel`` asks `current` whether it runs on a loop thread:
/// there it appends the outcome and schedules one wake-up with ``schedule(_:)``; anywhere else
/// (a retry's task, a producer failing a batch at once) it wakes the reader immediately.
///
/// Thread safety: not `Sendable`. Each loop thread makes one with `install()`
/// (``LoopThreadObject``), and only that thread reaches it, through `current`.
final class DeferredWakes: LoopThreadObject {
    private var pending: [@Sendable () -> Void] = []

    static let slot = LoopThreadSlot()

    init() {}

    /// Runs what is pending.
    func finish() { run() }

    /// Holds `wake` until the end of the pass.
    func schedule(_ wake: @escaping @Sendable () -> Void) {
        pending.append(wake)
    }

    /// Runs every held wake-up, in the order they were scheduled.
    func run() {
        var index = 0
        while index < pending.count {  // a wake-up that schedules another is run in this call too
            let wake = pending[index]
            index += 1
            wake()
        }
        pending.removeAll(keepingCapacity: true)
    }
}
