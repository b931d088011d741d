internal import CCurl

/// Gathers what the transport's loop writes in one pass (libcurl's turn in it) into few TCP
/// segments.
///
/// libcurl 7.88 writes what each step of each transfer produced (a request's frames, a window
/// update) with its own `send`, several per push, and sets `TCP_NODELAY`, so each became a
/// segment that could wake the server, whose answers came back as many small segments too. How many
/// segments a run made, and the client's kernel time with them, swung severalfold from one run to
/// the next. The loop therefore corks its connections (`TCP_CORK`)
/// while libcurl runs in a pass and uncorks them straight after, which sends what the
/// pass wrote in full segments. Every ``requestsPerFlush``-th request of a pass it uncorks and
/// corks again, so the server starts on the first requests while the loop writes the rest: one cork
/// over a whole pass held them all back and slowed the task-executor bulk send (Docs/Benchmarking.md,
/// "Write coalescing").
///
/// The kernel sends a full segment even when corked, and sends a corked partial one after 200 ms
/// at the latest; the loop never sleeps with a connection corked.
///
/// Thread safety: not `Sendable`. Each loop thread makes one with `install()`
/// (``LoopThreadObject``), and only that thread reaches it: the loop around libcurl's turn,
/// and libcurl's pre-request callback (inside it) through `current`.
final class CoalescedWrites: LoopThreadObject {
    /// Requests written between two flushes within a pass.
    static let requestsPerFlush = 8

    static let slot = LoopThreadSlot()

    /// The sockets corked for this pass.
    private var corked: [Int32] = []
    private var requests = 0
    /// The loop's probe of idle streams, when its connector measures them (``StreamIdleProbe``):
    /// the pre-request callback that reaches this object tells it a request is written.
    var streamIdle: StreamIdleProbe?

    init() {}

    /// Uncorks anything still corked.
    func finish() { end() }

    /// Before a pass that may write: corks `sockets`.
    func begin(_ sockets: some Sequence<Int32>) {
        requests = 0
        for socket in sockets where ccurl_set_tcp_cork(socket, 1) == 0 { corked.append(socket) }
    }

    /// libcurl is about to write a request on one of the connections.
    func requestWillBeWritten() {
        guard !corked.isEmpty else { return }
        requests += 1
        guard requests % CoalescedWrites.requestsPerFlush == 0 else { return }
        for socket in corked {
            _ = ccurl_set_tcp_cork(socket, 0)
            _ = ccurl_set_tcp_cork(socket, 1)
        }
    }

    /// libcurl closes `socket`: it is not touched again (its number may be reused).
    func forget(_ socket: Int32) {
        corked.removeAll { $0 == socket }
    }

    /// After the pass: uncorks, which sends what it wrote.
    func end() {
        for socket in corked { _ = ccurl_set_tcp_cork(socket, 0) }
        corked.removeAll(keepingCapacity: true)
    }
}
