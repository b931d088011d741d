/// What the loop knows of its connections: the sockets libcurl opened through it, when each
/// connection last delivered an answer, those shut down as stalled or being retired, whether the
/// next request must make a new connection, and the stream limit libcurl applies when it picks
/// one.
///
/// It owns those fields and takes the loop's events — a socket opened or closed, an answer read,
/// a connection established, a GOAWAY, a stall judged, a connection tied to another key — and
/// answers what follows: which retired connections may close now, whether a request is the one
/// that makes the awaited connection, which stream limit to apply. The loop makes the system and
/// libcurl calls (shutting a socket down, setting the limit) and logs; this value makes none.
/// `ConnectionTableTests` checks it without libcurl or a socket.
///
/// Thread safety: none; the loop thread alone uses it. Its stored properties are
/// `@exclusivity(unchecked)` for the reason the loop's are: one thread, and no access overlaps
/// another. ``stalled`` is shared with the loop's transfers, read on the same thread.
final class ConnectionTable {
    /// The sockets libcurl opened through this loop and has not closed.
    @exclusivity(unchecked) private(set) var openSockets: Set<Int32> = []
    /// The same sockets, the oldest first: the newest is the one a pool that shrinks retires.
    @exclusivity(unchecked) private(set) var socketsInOrder: [Int32] = []
    /// When each connection (by local port) last delivered a response, to tell a stalled
    /// connection from a slow request.
    @exclusivity(unchecked) private var lastAnswers: [Int32: ContinuousClock.Instant] = [:]
    /// Local ports of connections APNs tied to another key (``retire(port:)``): nothing new starts
    /// until the requests written on them are answered; then they are closed.
    @exclusivity(unchecked) private(set) var retiring: Set<Int32> = []
    /// No connection takes new streams (none is open yet, or the last one sent GOAWAY, stalled
    /// or is being retired) and none has been established since: the next request will make one.
    @exclusivity(unchecked) private(set) var awaitingConnection = true
    /// The request configured to make that connection quietly (``makesAwaitedConnection(_:)``);
    /// nil when none is.
    private weak var quietTransfer: Transfer?
    /// Local ports of connections shut down as stalled, or being retired: every transfer sees
    /// them, and none is written to one.
    let stalled = Transfer.StalledPorts()
    /// The stream limit libcurl applies now when it picks a connection for a request
    /// (``streamLimit(forDemand:libcurlIdle:)``).
    @exclusivity(unchecked) private(set) var streamLimit: Int
    /// The pool's size: the configured connections, and any added while its streams cycle slowly
    /// (``slowSpellBegan(at:)``, ``passed(demand:at:)``). The one holder of that number.
    @exclusivity(unchecked) private var growth: PoolGrowth
    /// Each connection's stream limit, as configured.
    let streamsPerConnection: Int

    /// `additionalWhenSlow` connections may be added to `connectionsPerHost` while slow, on
    /// `timing`.
    init(
        connectionsPerHost: Int, streamsPerConnection: Int, additionalWhenSlow: Int = 0,
        timing: PoolGrowth.Timing = PoolGrowth.Timing()
    ) {
        growth = PoolGrowth(base: connectionsPerHost, additional: additionalWhenSlow, timing: timing)
        self.streamsPerConnection = max(1, streamsPerConnection)
        streamLimit = self.streamsPerConnection
    }

    /// The connections the pool carries now.
    var connectionsPerHost: Int { growth.connections }
    /// What the pool carries at once: its connections now times each one's streams.
    var streamsInPool: Int { growth.connections * streamsPerConnection }
    /// What the pool carries at once with every connection it may add.
    var mostStreamsInPool: Int { growth.most * streamsPerConnection }

    // MARK: Sockets and connections

    /// libcurl opened `socket` through the loop.
    func opened(_ socket: Int32) {
        if openSockets.insert(socket).inserted { socketsInOrder.append(socket) }
    }

    /// libcurl closed `socket`, bound to local port `port`: whether it was one it had opened. The
    /// last one closing means the next request makes a new connection.
    func closed(_ socket: Int32, port: Int32) -> Bool {
        let wasOpen = openSockets.remove(socket) != nil
        if wasOpen { socketsInOrder.removeAll { $0 == socket } }
        if wasOpen, openSockets.isEmpty { awaitingConnection = true }
        lastAnswers[port] = nil
        stalled.ports.remove(port)
        return wasOpen
    }

    /// A connection was established: requests go on it, and the next made quietly is not this.
    func established() {
        awaitingConnection = false
        quietTransfer = nil
    }

    /// The server sent GOAWAY: its connection takes no new streams.
    func receivedGoAway() { awaitingConnection = true }

    /// An answer arrived on the connection at `port` at `now`.
    func answered(onPort port: Int32, at now: ContinuousClock.Instant) { lastAnswers[port] = now }

    /// When the connection at `port` last delivered an answer (nil: never, or not since it opened).
    func lastAnswer(onPort port: Int32) -> ContinuousClock.Instant? { lastAnswers[port] }

    /// The connection at `port` is shut down as stalled or being retired.
    func isStalled(port: Int32) -> Bool { stalled.ports.contains(port) }

    /// The loop shuts the connection at `port` down as stalled: nothing more is written to it, and
    /// the next request makes a new connection.
    func shutDownAsStalled(port: Int32) {
        stalled.ports.insert(port)
        awaitingConnection = true
    }

    /// APNs tied the connection at `port` to another key: nothing more is written to it, and it
    /// is closed once the requests written on it are answered (``retirable(isAwaited:)``). False
    /// when it is already stalled or retiring.
    func retire(port: Int32) -> Bool {
        guard !stalled.ports.contains(port) else { return false }
        stalled.ports.insert(port)
        retiring.insert(port)
        return true
    }

    /// The retiring connections no written request waits on (`isAwaited` says whether one does),
    /// taken off the list: the loop shuts each down (``closingRetired()``).
    func retirable(isAwaited: (Int32) -> Bool) -> [Int32] {
        var ready: [Int32] = []
        for port in retiring where !isAwaited(port) { ready.append(port) }
        retiring.subtract(ready)
        return ready
    }

    /// A retired connection is being shut down: the next request makes a new one, unless another
    /// connection is left to carry it (`othersLeft`: a pool that shrinks retires one of several).
    func closingRetired(othersLeft: Bool = false) {
        if !othersLeft { awaitingConnection = true }
    }

    /// Whether `transfer`, being configured, is the request that will make the awaited connection:
    /// the first configured while one is awaited (and again once that one has finished without
    /// making it). The loop configures it quietly (no verbose mode, whose TLS trace would stay on
    /// the connection for its whole life); every other request waits for that connection.
    func makesAwaitedConnection(_ transfer: Transfer) -> Bool {
        guard awaitingConnection, quietTransfer.map({ $0.isFinished }) != false else { return false }
        quietTransfer = transfer
        return true
    }

    // MARK: The pool's size

    /// A change of the pool's size, for libcurl: the connections it may open, and the stream limit
    /// when that changes with it (nil: the next ``streamLimit(forDemand:libcurlIdle:)`` sets a
    /// share).
    struct Resize: Equatable {
        let connections: Int
        let streamLimit: Int?
    }

    /// A slow spell began at `now`: the pool carries one connection more, if it may
    /// (``PoolGrowth/slowSpellBegan(at:)``); nil when it stays as it is.
    func slowSpellBegan(at now: ContinuousClock.Instant) -> Resize? {
        guard growth.slowSpellBegan(at: now) != nil else { return nil }
        return resized()
    }

    /// A pass at `now` found `demand` requests in libcurl and waiting for it: the pool carries one
    /// connection fewer once the demand has fit them long enough (``PoolGrowth/pass(demand:streamsPerConnection:at:)``);
    /// nil when it stays as it is.
    func passed(demand: Int, at now: ContinuousClock.Instant) -> Resize? {
        guard growth.pass(demand: demand, streamsPerConnection: streamsPerConnection, at: now) != nil else {
            return nil
        }
        return resized()
    }

    /// Back at one connection, that connection is no longer limited to a share: the limit is the
    /// configured streams again.
    private func resized() -> Resize {
        guard growth.connections == 1, streamLimit != streamsPerConnection else {
            return Resize(connections: growth.connections, streamLimit: nil)
        }
        streamLimit = streamsPerConnection
        return Resize(connections: 1, streamLimit: streamLimit)
    }

    // MARK: Stream limits

    /// The stream limit to give libcurl for `demand` requests (in libcurl and waiting for it),
    /// or nil to keep the current one: each connection's share, at least one and at most the
    /// configured streams, raised at once and lowered only while libcurl holds no request
    /// (`libcurlIdle`). Why: ``CurlMultiLoop/spreadOverConnections(on:)``.
    func streamLimit(forDemand demand: Int, libcurlIdle: Bool) -> Int? {
        let share = min(streamsPerConnection, max(1, (demand + connectionsPerHost - 1) / connectionsPerHost))
        guard share > streamLimit || (share < streamLimit && libcurlIdle) else { return nil }
        streamLimit = share
        return share
    }
}
