import Foundation

/// What libcurl's socket interface asks the loop to watch, and what the loop's sleep found: the
/// sockets libcurl waits on (with poll(2)'s events), libcurl's one timer, the sockets poll(2)
/// found ready for the next pass, and whether the next pass must run every transfer (a connection
/// closed, or the periodic run while any is in flight).
///
/// It owns those fields and takes libcurl's callbacks (``libcurlWatches(_:events:remove:)``,
/// ``libcurlTimer(_:at:)``) and the loop's events; it answers what a pass runs (``takeTimer(at:)``,
/// ``takeNews(ranDue:stillReady:)``, ``runsEveryTransfer(news:busy:at:)``) and builds and reads
/// the set poll(2) is given. The loop makes the libcurl and poll(2) calls themselves; why it runs
/// what it runs is said at ``CurlMultiLoop/runLibcurl(_:)``.
///
/// Thread safety: none; the loop thread alone uses it (libcurl calls back only from inside the
/// loop's own `curl_multi_*` calls). Its stored properties are `@exclusivity(unchecked)` for the
/// reason the loop's are: one thread, and no access overlaps another.
final class SocketWatch {
    /// The sockets libcurl waits on, with what it waits for (poll(2)'s events).
    @exclusivity(unchecked) private(set) var watched: [Int32: Int16] = [:]
    /// When libcurl's timer is due (nil: none is set).
    @exclusivity(unchecked) private(set) var timerDue: ContinuousClock.Instant?
    /// Those poll(2) found ready, for the next pass.
    @exclusivity(unchecked) private var ready: [Int32] = []
    /// The set poll(2) is given (kept for its capacity), and how many of its entries, after the
    /// wake-up pipe's, are libcurl's sockets (the rest are idle connections keep-warm watches).
    @exclusivity(unchecked) private var pollSet: [pollfd] = []
    @exclusivity(unchecked) private var libcurlEntries = 0
    /// The next pass runs every transfer (a connection closed).
    @exclusivity(unchecked) private var runEveryTransferNext = false
    /// While anything is in flight, every transfer in libcurl runs at least this often.
    private let everyTransfer: CurlMultiLoop.Periodic

    init(everyTransferInterval: Duration, startingAt start: ContinuousClock.Instant) {
        everyTransfer = CurlMultiLoop.Periodic(every: everyTransferInterval, startingAt: start)
    }

    // MARK: libcurl's callbacks

    /// `CURLMOPT_SOCKETFUNCTION`: what libcurl waits for on `socket` from now on (`CURL_POLL_*`
    /// as poll(2) events: `events`; `remove` when it is done with the socket).
    func libcurlWatches(_ socket: Int32, events: Int16, remove: Bool) {
        if remove || events == 0 {
            watched.removeValue(forKey: socket)
        } else {
            watched[socket] = events
        }
    }

    /// `CURLMOPT_TIMERFUNCTION`: libcurl wants to run what is due in `milliseconds` from `now`
    /// (0: at once), or no longer (-1). One timer, replaced by each call.
    func libcurlTimer(_ milliseconds: Int, at now: ContinuousClock.Instant) {
        timerDue = milliseconds < 0 ? nil : now + .milliseconds(milliseconds)
    }

    // MARK: A pass

    /// Whether libcurl's timer is due at `now` (read only when a timer is set); a due timer is
    /// spent (until libcurl sets another).
    func takeTimer(at now: @autoclosure () -> ContinuousClock.Instant) -> Bool {
        guard let due = timerDue, due <= now() else { return false }
        timerDue = nil
        return true
    }

    /// Whether a socket poll(2) found ready still has news, and forgets the ready ones. After the
    /// due transfers ran (`ranDue`), whose reads usually empty the socket, each is asked again
    /// (`stillReady`, with the events libcurl waits for) and left alone if nothing is left on it;
    /// otherwise any ready socket is news. A connection that closed is news too.
    func takeNews(ranDue: Bool, stillReady: (pollfd) -> Bool) -> Bool {
        defer { ready.removeAll(keepingCapacity: true) }
        if runEveryTransferNext { return true }
        for socket in ready {
            guard ranDue else { return true }
            guard let events = watched[socket] else { continue }  // libcurl is done with it
            if stillReady(pollfd(fd: socket, events: events, revents: 0)) { return true }
        }
        return false
    }

    /// Whether this pass runs every transfer at `now` (read only when it decides): on `news`, and
    /// periodically while any is in flight (`busy`). Running them answers a closed connection's
    /// call for it.
    func runsEveryTransfer(news: Bool, busy: Bool, at now: @autoclosure () -> ContinuousClock.Instant) -> Bool {
        guard news || (busy && everyTransfer.isDue(at: now())) else { return false }
        runEveryTransferNext = false
        return true
    }

    /// A connection closed: the next pass runs every transfer (libcurl moves transfers waiting for
    /// a connection only when some transfer runs after one changed).
    func connectionClosed() { runEveryTransferNext = true }

    // MARK: The sleep

    /// Builds the set poll(2) is given — the wake-up pipe, libcurl's sockets, and `idle` sockets
    /// libcurl does not watch (keep-warm's idle connections), for reading — and hands it to
    /// `body`, which makes the call.
    func withPollSet<Result>(
        wake: Int32, idle: Set<Int32>?, _ body: (UnsafeMutableBufferPointer<pollfd>) -> Result
    ) -> Result {
        pollSet.removeAll(keepingCapacity: true)
        pollSet.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
        for (socket, events) in watched { pollSet.append(pollfd(fd: socket, events: events, revents: 0)) }
        libcurlEntries = pollSet.count
        if let idle {
            for socket in idle where watched[socket] == nil {
                pollSet.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0))
            }
        }
        return pollSet.withUnsafeMutableBufferPointer { body($0) }
    }

    /// Reads what poll(2) found in the set ``withPollSet(wake:idle:_:)`` made: libcurl's ready sockets
    /// wait for the next pass (one poll(2) calls invalid is no longer watched: libcurl finds out as
    /// it runs). Returns whether the wake-up pipe is readable, and whether a socket `isIdle` names
    /// (or one libcurl does not watch) stirred.
    func polled(isIdle: (Int32) -> Bool) -> (woken: Bool, idleStirred: Bool) {
        var idleStirred = false
        for index in 1..<pollSet.count where pollSet[index].revents != 0 {
            let entry = pollSet[index]
            guard index < libcurlEntries else {
                idleStirred = true
                continue
            }
            if isIdle(entry.fd) { idleStirred = true }
            if entry.revents & Int16(POLLNVAL) != 0 { watched.removeValue(forKey: entry.fd) }
            ready.append(entry.fd)
        }
        return (pollSet[0].revents != 0, idleStirred)
    }
}
