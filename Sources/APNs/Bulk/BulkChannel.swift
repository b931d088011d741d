/// The hand-over between a bulk send's producer (which starts requests), the transport (which
/// delivers their results, on its own thread) and the consumer (which iterates the outcomes).
///
/// Back-pressure is one count: a permit is taken for each request started and given back when the
/// consumer reads that request's outcome. With `limit` permits, requests in flight plus outcomes
/// not yet read never exceed `limit`, so memory is bounded whatever the number of devices, and
/// `deliver` never has to wait (it runs on the transport's thread).
///
/// The producer waits only when every permit is taken, and is woken once `wakeBatch` permits are
/// free again rather than once per outcome read, so a bulk send costs the producer a wake-up per
/// batch, not per device.
///
/// Thread safety: `Sendable`; all state is behind one mutex, and each side keeps at most one
/// suspended continuation.
///
/// The continuations are `UnsafeContinuation`s: each is taken out of the state under the mutex
/// before it is resumed, so it is resumed exactly once without the checked variant's bookkeeping
/// (and, a type of the resilient Concurrency library, every copy of a `CheckedContinuation?` in
/// the state would go through runtime value witnesses).
final class BulkChannel<Element: Sendable>: Sendable {
    private struct State {
        /// Results not yet read, oldest first.
        var items = Ring<Element>()
        /// Permits taken: requests started whose outcome has not been read.
        var taken = 0
        /// Requests started whose result has not been delivered.
        var outstanding = 0
        var producerDone = false
        var closed = false
        var waitingReceiver: UnsafeContinuation<Element?, Never>?
        var waitingProducer: UnsafeContinuation<Int, Never>?
        var wanted = 0
        /// A wake-up of the waiting consumer is held until the transport's pass ends.
        var wakeScheduled = false
        var onClose: (@Sendable () -> Void)?

        mutating func popFirst() -> Element? { items.popFirst() }

        /// Permits for a waiting producer, once enough are free; takes them.
        mutating func grantToWaitingProducer(limit: Int, wakeBatch: Int) -> (UnsafeContinuation<Int, Never>, Int)? {
            guard let producer = waitingProducer else { return nil }
            let free = limit - taken
            guard free >= Swift.min(wakeBatch, wanted) else { return nil }
            let granted = Swift.min(free, wanted)
            taken += granted
            outstanding += granted
            waitingProducer = nil
            return (producer, granted)
        }

        var isDrained: Bool { producerDone && outstanding == 0 && items.isEmpty }

        mutating func takeReceiver() -> UnsafeContinuation<Element?, Never>? {
            defer { waitingReceiver = nil }
            return waitingReceiver
        }
    }

    private enum ReceiveAction {
        case item(Element, (UnsafeContinuation<Int, Never>, Int)?)
        case end
        case wait
    }

    let limit: Int
    private let wakeBatch: Int
    private let state = Locked(State())

    init(limit: Int) {
        self.limit = Swift.max(1, limit)
        // A free permit waits for the batch, and a stream with no request is a stream idle: where
        // answers trickle in (APNs tens of milliseconds away), a slot waits half a batch's refill
        // on average. A sixteenth of the limit keeps that to a small share of the streams; at most
        // 32, because larger batches left streams idle far from APNs and smaller ones cost CPU
        // per push without filling more (Docs/Benchmarking.md, "Refills and the reserve").
        wakeBatch = Self.refillBatch(forLimit: self.limit)
    }

    /// How many free permits wake the producer.
    static func refillBatch(forLimit limit: Int) -> Int { Swift.max(1, Swift.min(32, limit / 16)) }

    /// The limit a bulk send takes when its caller gives none: what the connector carries at once
    /// plus a reserve of two refill batches, queued in the connector. A stream that frees then takes
    /// the next request in the same pass of the loop, where without the reserve it stays idle until
    /// the consumer has read the outcome and the producer has handed over the next batch (a few ms
    /// on a busy machine; Docs/Benchmarking.md, "Refills and the reserve").
    /// Saturates instead of overflowing: a connector of yours may report `Int.max` for "no limit".
    static func defaultLimit(concurrency: Int) -> Int {
        let concurrency = Swift.max(1, concurrency)
        let (sum, overflow) = concurrency.addingReportingOverflow(2 * refillBatch(forLimit: concurrency))
        return overflow ? Int.max : sum
    }

    /// Called (once) when the consumer goes away, to cancel what is in flight.
    func onClose(_ action: @escaping @Sendable () -> Void) {
        let closedAlready = state.withLock { state -> Bool in
            if state.closed { return true }
            state.onClose = action
            return false
        }
        if closedAlready { action() }
    }

    // MARK: Producer

    /// Takes between 1 and `wanted` permits, waiting while none is free; each permit is one
    /// request the producer must start (or give back with ``giveBack(_:)``). Returns 0 once the
    /// consumer has gone.
    func take(upTo wanted: Int) async -> Int {
        let wanted = Swift.max(1, wanted)
        let granted = state.withLock { state -> Int? in
            if state.closed { return 0 }
            let free = limit - state.taken
            guard free > 0 else { return nil }
            let granted = Swift.min(free, wanted)
            state.taken += granted
            state.outstanding += granted
            return granted
        }
        if let granted { return granted }
        return await withUnsafeContinuation { (continuation: UnsafeContinuation<Int, Never>) in
            let now = state.withLock { state -> Int? in
                if state.closed { return 0 }
                let free = limit - state.taken
                if free > 0 {
                    let granted = Swift.min(free, wanted)
                    state.taken += granted
                    state.outstanding += granted
                    return granted
                }
                state.wanted = wanted
                state.waitingProducer = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Returns permits the producer took but did not use (it ran out of devices).
    func giveBack(_ count: Int) {
        guard count > 0 else { return }
        let receiver = state.withLock { state -> UnsafeContinuation<Element?, Never>? in
            state.taken -= count
            state.outstanding -= count
            return state.isDrained ? state.takeReceiver() : nil
        }
        receiver?.resume(returning: nil)
    }

    /// The producer has started everything it will start.
    func finish() {
        let receiver = state.withLock { state -> UnsafeContinuation<Element?, Never>? in
            state.producerDone = true
            return state.isDrained ? state.takeReceiver() : nil
        }
        receiver?.resume(returning: nil)
    }

    // MARK: Transport

    /// The result of one started request. Never waits; dropped once the consumer has gone.
    ///
    /// On the transport's loop thread, a waiting consumer is woken once at the end of the loop's
    /// pass (``DeferredWakes``) for everything the pass delivered, instead of once per result.
    func deliver(_ element: Element) {
        let deferredWakes = DeferredWakes.current
        // What to do after the lock, in plain variables: an enum of generic continuations here
        // was copied and destroyed through the runtime's value witnesses.
        var receiver: UnsafeContinuation<Element?, Never>?
        var producer: (UnsafeContinuation<Int, Never>, Int)?
        var scheduleWake = false
        state.withLock { state in
            state.outstanding -= 1
            if state.closed { return }
            guard let waiting = state.waitingReceiver else {
                state.items.append(element)
                return
            }
            if deferredWakes != nil {
                state.items.append(element)
                if !state.wakeScheduled {
                    state.wakeScheduled = true
                    scheduleWake = true
                }
                return
            }
            // Handed straight to the waiting consumer: read, so its permit is free again.
            state.waitingReceiver = nil
            state.taken -= 1
            receiver = waiting
            producer = state.grantToWaitingProducer(limit: limit, wakeBatch: wakeBatch)
        }
        if scheduleWake { deferredWakes?.schedule { [self] in wakeReceiver() } }
        if let receiver {
            receiver.resume(returning: element)
            if let (continuation, granted) = producer { continuation.resume(returning: granted) }
        }
    }

    /// The deferred wake-up: hands the first result to the consumer if it is still waiting.
    private func wakeReceiver() {
        let action = state.withLock {
            state -> (UnsafeContinuation<Element?, Never>, Element, (UnsafeContinuation<Int, Never>, Int)?)? in
            state.wakeScheduled = false
            guard let receiver = state.waitingReceiver, let item = state.popFirst() else { return nil }
            state.waitingReceiver = nil
            state.taken -= 1
            return (receiver, item, state.grantToWaitingProducer(limit: limit, wakeBatch: wakeBatch))
        }
        if let (receiver, item, producer) = action {
            receiver.resume(returning: item)
            if let (continuation, granted) = producer { continuation.resume(returning: granted) }
        }
    }

    // MARK: Consumer

    /// The next outcome if one is waiting to be read, without suspending; nil when none is (the
    /// consumer then calls ``receive()``, which also tells the end apart).
    func receiveIfReady() -> Element? {
        var producer: (UnsafeContinuation<Int, Never>, Int)?
        let item = state.withLock { state -> Element? in
            guard let item = state.popFirst() else { return nil }
            state.taken -= 1
            producer = state.grantToWaitingProducer(limit: limit, wakeBatch: wakeBatch)
            return item
        }
        if let (continuation, granted) = producer { continuation.resume(returning: granted) }
        return item
    }

    /// The next outcome, or nil once everything started was read (or the channel was closed).
    /// Waits on the caller's actor (`isolation`), so the wake-up resumes the consumer there.
    func receive(isolation: isolated (any Actor)? = #isolation) async -> Element? {
        func attempt(_ state: inout State, continuation: UnsafeContinuation<Element?, Never>?) -> ReceiveAction {
            if let item = state.popFirst() {
                state.taken -= 1
                return .item(item, state.grantToWaitingProducer(limit: limit, wakeBatch: wakeBatch))
            }
            if state.closed || state.isDrained { return .end }
            if let continuation { state.waitingReceiver = continuation }
            return .wait
        }
        switch state.withLock({ attempt(&$0, continuation: nil) }) {
        case .item(let item, let producer):
            if let (continuation, granted) = producer { continuation.resume(returning: granted) }
            return item
        case .end:
            return nil
        case .wait:
            return await withUnsafeContinuation(isolation: isolation) {
                (continuation: UnsafeContinuation<Element?, Never>) in
                switch state.withLock({ attempt(&$0, continuation: continuation) }) {
                case .item(let item, let producer):
                    continuation.resume(returning: item)
                    if let (waiting, granted) = producer { waiting.resume(returning: granted) }
                case .end:
                    continuation.resume(returning: nil)
                case .wait:
                    break
                }
            }
        }
    }

    /// The consumer has gone: the producer stops, what is in flight is cancelled, later results
    /// are dropped.
    func close() {
        let (producer, receiver, action) = state.withLock { state in
            guard !state.closed else {
                return (
                    nil as UnsafeContinuation<Int, Never>?, nil as UnsafeContinuation<Element?, Never>?,
                    nil as (@Sendable () -> Void)?
                )
            }
            state.closed = true
            state.items = Ring()
            defer {
                state.waitingProducer = nil
                state.waitingReceiver = nil
                state.onClose = nil
            }
            return (state.waitingProducer, state.waitingReceiver, state.onClose)
        }
        producer?.resume(returning: 0)
        receiver?.resume(returning: nil)
        action?()
    }
}

/// A first-in first-out queue in a circular buffer: elements are moved in and out (no copy left
/// behind to release later), and the storage is reused once it has grown to what the channel
/// holds at most (its permits). `Array.removeFirst` compaction cost about 1,200 instructions per
/// push here.
struct Ring<Element> {
    private var slots: [Element?] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == slots.count { grow() }
        var index = head + count
        if index >= slots.count { index -= slots.count }
        slots[index] = element
        count += 1
    }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = slots[head].take()
        head += 1
        if head == slots.count { head = 0 }
        count -= 1
        return element
    }

    /// Doubles the storage (at least 16 slots), oldest element first.
    private mutating func grow() {
        var larger = [Element?](repeating: nil, count: Swift.max(16, slots.count * 2))
        for offset in 0..<count {
            var index = head + offset
            if index >= slots.count { index -= slots.count }
            larger[offset] = slots[index].take()
        }
        slots = larger
        head = 0
    }
}
