internal import CCurl
import Foundation

// libcurl's socket interface: the loop watches the sockets libcurl names, runs only what is due,
// and sleeps in poll(2) on those sockets and its wake-up pipe.
//
// `curl_multi_perform` runs every transfer in libcurl on each call, and libcurl 7.88 polls the
// socket once for each of them; with 1,000 streams on one connection, a pass costs that much
// whether one answer arrived or a thousand, and a request added after a pass waits for the whole
// next one before it is written. With `curl_multi_socket_action` libcurl runs the transfers whose
// time has come: a request just added, a stream whose data another transfer's read took in (libcurl
// marks those), a timeout; only news on a socket runs every transfer (``runLibcurl(_:)`` says why).
// Far from APNs, where answers arrive a few at a time and each frees a stream, that is what keeps
// the streams busy, at less CPU per push.

extension CurlMultiLoop {
    /// `CURL_SOCKET_TIMEOUT` (a macro Swift cannot import): run what is due, not a socket's transfers.
    static let socketTimeout = curl_socket_t(-1)

    /// Hands libcurl the loop's socket and timer callbacks; called once, from `init`.
    func installSocketCallbacks(on multi: UnsafeMutableRawPointer) throws(RefusedOption) {
        let loop = Unmanaged.passUnretained(self).toOpaque()
        try require(ccurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, loop), "CURLMOPT_SOCKETDATA")
        try require(
            ccurl_multi_setopt_socket(multi) { _, socket, what, context, _ in
                guard let context else { return 0 }
                Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().libcurlWatches(socket, what: what)
                return 0
            }, "CURLMOPT_SOCKETFUNCTION")
        try require(ccurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, loop), "CURLMOPT_TIMERDATA")
        try require(
            ccurl_multi_setopt_timer(multi) { _, milliseconds, context in
                guard let context else { return 0 }
                Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().libcurlTimer(milliseconds)
                return 0
            }, "CURLMOPT_TIMERFUNCTION")
    }

    /// `CURLMOPT_SOCKETFUNCTION`: what libcurl waits for on `socket` from now on (`CURL_POLL_*`).
    /// libcurl calls it from inside the loop's own `curl_multi_*` calls only.
    func libcurlWatches(_ socket: curl_socket_t, what: Int32) {
        var events: Int16 = 0
        if what & Int32(CURL_POLL_IN) != 0 { events |= Int16(POLLIN) }
        if what & Int32(CURL_POLL_OUT) != 0 { events |= Int16(POLLOUT) }
        sockets.libcurlWatches(socket, events: events, remove: what == Int32(CURL_POLL_REMOVE))
    }

    /// `CURLMOPT_TIMERFUNCTION`: libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` in
    /// `milliseconds` (0: at once), or no longer (-1). One timer, replaced by each call; once run,
    /// it is spent until libcurl sets another.
    func libcurlTimer(_ milliseconds: Int) {
        sockets.libcurlTimer(milliseconds, at: .now)
    }

    /// Lets libcurl run what is due, then every transfer if a socket had news: the part of a pass
    /// that runs libcurl.
    ///
    /// What is due runs first, alone, because it is cheap: a request just added, a stream whose
    /// answer another transfer's read took in (libcurl reads a connection for any of its transfers
    /// and marks the streams it found data for as due). That read usually empties the socket, so a
    /// socket poll(2) found ready before is asked again (no wait) and left alone if nothing is left
    /// on it. When something is, every transfer runs, as a pass of `curl_multi_perform` would run
    /// them (`curl_multi_socket_all`), not only those on that socket (`curl_multi_socket_action`):
    /// libcurl 7.88 moves the transfers waiting for a connection, which are on no socket, only when
    /// some transfer runs after a connection changed, and a stream whose session ended (GOAWAY)
    /// finds out only when it runs; through repeated GOAWAY, running only the socket's transfers
    /// left sends waiting until their deadlines. For the same reasons every transfer also runs
    /// after a connection closed, and once per ``activeSweepInterval`` while any is in flight
    /// (``SocketWatch`` keeps what decides it).
    func runLibcurl(_ multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        var running: Int32 = 0
        let ranDue = sockets.takeTimer(at: .now)
        if ranDue { runDue(multi) }
        let news = sockets.takeNews(ranDue: ranDue) { entry in
            var entry = entry
            return Foundation.poll(&entry, 1, 0) > 0
        }
        if sockets.runsEveryTransfer(news: news, busy: !pool.isEmpty, at: .now) {
            _ = ccurl_multi_socket_all(multi, &running)
        }
    }

    /// Lets libcurl run what is due (`curl_multi_socket_action` with `CURL_SOCKET_TIMEOUT`), once
    /// its timer has come (``SocketWatch/takeTimer(at:)``).
    func runDue(_ multi: UnsafeMutableRawPointer) {
        var running: Int32 = 0
        curl_multi_socket_action(multi, CurlMultiLoop.socketTimeout, 0, &running)
    }

    /// Sleeps in poll(2) until a socket libcurl watches is ready, a wake-up, libcurl's timer or
    /// `limit`; while keeping warm with nothing in flight, also until an idle connection's socket
    /// is readable (libcurl does not watch idle connections). What is ready waits in
    /// ``SocketWatch`` for the next pass.
    func poll(_ multi: UnsafeMutableRawPointer, upTo limit: Duration, phase: Phase) {
        assertOnLoopThread()
        var limit = limit
        var running = false
        if case .running = phase { running = true }
        let (nextWarmUp, keepingWarm) = keepWarm.sleepPlan(at: clock.now, running: running, busy: !pool.isEmpty)
        if let nextWarmUp { limit = min(limit, nextWarmUp - clock.now) }  // the next attempt on time
        // libcurl's timer is on the real clock, whatever the loop's own.
        if let due = sockets.timerDue { limit = min(limit, max(.zero, due - .now)) }
        let milliseconds = limit <= .zero ? 0 : Int32(clamping: max(1, limit.millisecondsRoundedUp))
        let idle = keepingWarm ? connections.openSockets : nil
        let count = sockets.withPollSet(wake: wake.readEnd, idle: idle) {
            Foundation.poll($0.baseAddress, nfds_t($0.count), milliseconds)
        }
        guard count > 0 else { return }
        let (woken, idleStirred) = sockets.polled { idle?.contains($0) == true }
        if woken { wake.drain() }
        if idleStirred { keepWarm.idleConnectionStirred() }
    }
}

/// The loop's wake-up: a pipe whose read end the loop polls beside libcurl's sockets. Any thread
/// may ``signal()``; the loop drains it when poll(2) finds it readable.
///
/// Thread safety: `Sendable`. The descriptors are set in `init` and closed in `deinit`; a write and
/// a read of a pipe are safe from any threads at once.
final class WakePipe: Sendable {
    let readEnd: Int32
    private let writeEnd: Int32

    /// Nil when the system has no descriptors to spare.
    init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        (readEnd, writeEnd) = (ends[0], ends[1])
    }

    /// Makes the read end readable. A full pipe is readable already: nothing is lost.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe (on the loop thread, after poll(2) found it readable).
    func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &bytes, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
