import Synchronization

/// A single-producer, single-consumer async buffer with a fixed capacity: `send` suspends while
/// the buffer is full, `receive` while it is empty. This is the back-pressure of bulk sends.
///
/// Thread safety: `Sendable`; all state is behind one mutex, and each side keeps at most one
/// suspended continuation.
final class BoundedBuffer<Element: Sendable>: Sendable {
    private struct State {
        var items: [Element] = []
        var head = 0
        var finished = false
        var closed = false
        var waitingReceiver: CheckedContinuation<Element?, Never>?
        var waitingSender: CheckedContinuation<Bool, Never>?

        var count: Int { items.count - head }

        mutating func popFirst() -> Element? {
            guard head < items.count else { return nil }
            let item = items[head]
            head += 1
            if head > 1024 && head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return item
        }
    }

    private enum SendAction {
        case resumeReceiver(CheckedContinuation<Element?, Never>)
        case stored, closed, wait
    }

    private enum ReceiveAction {
        case item(Element, CheckedContinuation<Bool, Never>?)
        case end, wait
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Adds `element`, waiting while the buffer is full. Returns false when the consumer has gone
    /// (the element is dropped).
    func send(_ element: Element) async -> Bool {
        let action = state.withLock { state -> SendAction in
            if state.closed { return .closed }
            if let receiver = state.waitingReceiver {
                state.waitingReceiver = nil
                return .resumeReceiver(receiver)
            }
            if state.count < capacity {
                state.items.append(element)
                return .stored
            }
            return .wait
        }
        switch action {
        case .resumeReceiver(let receiver):
            receiver.resume(returning: element)
            return true
        case .stored:
            return true
        case .closed:
            return false
        case .wait:
            let accepted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.closed { return true }
                    if state.count < capacity { return true }
                    state.waitingSender = continuation
                    return false
                }
                if resumeNow { continuation.resume(returning: true) }
            }
            guard accepted else { return false }
            return await send(element)
        }
    }

    /// The next element, or nil once the producer finished and everything was read (or the
    /// buffer was closed).
    func receive() async -> Element? {
        let action = state.withLock { state -> ReceiveAction in
            if let item = state.popFirst() {
                let sender = state.waitingSender
                state.waitingSender = nil
                return .item(item, sender)
            }
            if state.finished || state.closed { return .end }
            return .wait
        }
        switch action {
        case .item(let item, let sender):
            sender?.resume(returning: true)
            return item
        case .end:
            return nil
        case .wait:
            return await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let now = state.withLock { state -> ReceiveAction in
                    if let item = state.popFirst() {
                        let sender = state.waitingSender
                        state.waitingSender = nil
                        return .item(item, sender)
                    }
                    if state.finished || state.closed { return .end }
                    state.waitingReceiver = continuation
                    return .wait
                }
                switch now {
                case .item(let item, let sender):
                    sender?.resume(returning: true)
                    continuation.resume(returning: item)
                case .end:
                    continuation.resume(returning: nil)
                case .wait:
                    break
                }
            }
        }
    }

    /// The producer is done: the consumer reads what is left, then nil.
    func finish() async {
        let receiver = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.finished = true
            defer { state.waitingReceiver = nil }
            return state.waitingReceiver
        }
        receiver?.resume(returning: nil)
    }

    /// The consumer is gone: a waiting sender is released and later sends are refused.
    func close() {
        let (sender, receiver) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, CheckedContinuation<Element?, Never>?) in
            state.closed = true
            defer {
                state.waitingSender = nil
                state.waitingReceiver = nil
            }
            return (state.waitingSender, state.waitingReceiver)
        }
        sender?.resume(returning: false)
        receiver?.resume(returning: nil)
    }
}
