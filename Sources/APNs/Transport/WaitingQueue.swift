/// The transfers the loop has taken in that wait, in order, for room in libcurl (rather than in
/// libcurl's own pending queue): new sends, and requests the server refused before processing
/// them, queued again.
///
/// It owns the queue and when it is next checked against deadlines; the loop asks it what to
/// start and what to fail, and does the starting and failing (libcurl, the results) itself. No
/// libcurl call, no clock read: the time is given.
///
/// A head index instead of `removeFirst`: a bulk send's thousands of transfers leave the front
/// one at a time, and the array is compacted only when it is empty or mostly consumed.
///
/// Thread safety: none; the loop thread alone uses it (`CurlMultiLoop` is `@unchecked Sendable`
/// on that ground). Its stored properties are `@exclusivity(unchecked)` for the reason the loop's
/// are: one thread, and no access overlaps another.
final class WaitingQueue {
    @exclusivity(unchecked) private var transfers: [Transfer] = []
    @exclusivity(unchecked) private var head = 0
    private let sweep: CurlMultiLoop.Periodic

    /// How often the waiting transfers are checked against their deadlines (``expired(at:)``).
    static let sweepInterval: Duration = .milliseconds(50)

    init(startingAt start: ContinuousClock.Instant) {
        sweep = CurlMultiLoop.Periodic(every: WaitingQueue.sweepInterval, startingAt: start)
    }

    /// Nothing waits.
    var isEmpty: Bool { head == transfers.count }

    /// How many wait (finished ones not yet passed over included).
    var count: Int { transfers.count - head }

    /// The waiting transfers, first first.
    var waiting: ArraySlice<Transfer> { transfers[head...] }

    /// Queues `transfer` behind the others.
    func append(_ transfer: Transfer) {
        transfers.append(transfer)
    }

    /// Takes the first waiting transfer that is not finished (finished ones are dropped on the
    /// way), or nil when none is left. Call ``compact()`` once done taking.
    func next() -> Transfer? {
        while head < transfers.count {
            let transfer = transfers[head]
            head += 1
            if !transfer.isFinished { return transfer }
        }
        return nil
    }

    /// Frees what was taken: all of it when the queue is empty, else the front once it is most of
    /// a long array.
    func compact() {
        if head == transfers.count {
            transfers.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096 && head * 2 > transfers.count {
            transfers.removeFirst(head)
            head = 0
        }
    }

    /// The waiting transfers whose deadline has passed at `now` (``TransferDeadline/verdict(at:)``),
    /// at most once per ``sweepInterval``: they never reached libcurl, so the loop fails them as
    /// not sent (or, after a refusal, not processed). They stay in the queue, finished, until
    /// ``next()`` passes over them.
    func expired(at now: ContinuousClock.Instant) -> [Transfer] {
        guard !isEmpty, sweep.isDue(at: now) else { return [] }
        var expired: [Transfer] = []
        for transfer in transfers[head...] where !transfer.isFinished {
            if case .passed = transfer.time.verdict(at: now) { expired.append(transfer) }
        }
        return expired
    }

    /// Empties the queue, returning what waited (the loop fails it when it stops).
    func removeAll() -> ArraySlice<Transfer> {
        defer {
            transfers.removeAll()
            head = 0
        }
        return transfers[head...]
    }
}
