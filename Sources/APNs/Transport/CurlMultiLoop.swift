internal import CCurl
import Foundation
import Logging

/// The thread that owns one libcurl multi handle and every easy handle on it.
///
/// Tasks hand it work through a locked inbox and wake it with `curl_multi_wakeup`; the thread adds
/// easy handles, runs `curl_multi_perform`, resumes the continuations of finished transfers and
/// sleeps in `curl_multi_poll`. No libcurl call happens anywhere else, except `curl_multi_wakeup`,
/// which libcurl allows from any thread and which is only made under the inbox lock while the
/// multi handle is known to be alive.
///
/// Every transfer handed to it completes exactly once: with the response, or with a
/// ``TransportError`` whose ``TransportError/delivery`` says whether the request may have reached a
/// server (see ``Transfer``). Its deadline counts from when the send was made, wherever it waits.
///
/// It is also a `TaskExecutor`: a task that prefers it (``TokenConnector/taskExecutor``) runs on
/// the loop thread between passes, so a send made there, and the code after it, cross no thread.
/// Jobs wait in the same inbox as operations, in order. One the loop will no longer run (it is
/// draining or stopped) goes to the global concurrent executor instead: no task is stranded.
///
/// `@unchecked Sendable`: `multi`, `active`, `idle`, `waiting` and `handles` are touched only
/// on the loop thread (after `init`, which runs before the thread starts, or, if the thread never
/// started, by the one `shutdown` call that finds it so); shared state is in the `inbox` mutex.
/// The loop-thread state on the send path is marked `@exclusivity(unchecked)`: one thread touches
/// it, libcurl calls back only from inside `curl_multi_*` calls the loop makes outside any access
/// to those properties, so no two accesses can overlap, and the dynamic check cost about 2,000
/// instructions per push (callgrind).
final class CurlMultiLoop: @unchecked Sendable {
    struct Settings: Sendable {
        var connectTimeoutMilliseconds: Int
        var maximumIdleSeconds: Int
        var tcpKeepAliveSeconds: Int?
        var circuitBreaker: CircuitBreakerPolicy?
        var trustedCA: [UInt8]?
        var identity: ClientIdentity?
        /// Connection events go to its logger and metrics; the logger was captured when the
        /// connector was made (task-locals do not reach this thread).
        var observability: Observability
        /// Watch for GOAWAY frames on libcurl's verbose channel (``TransportConfiguration/reportsGoAway``).
        var reportsGoAway: Bool
    }

    enum Operation {
        case add(Transfer)
        case cancel(Transfer)
        /// Cancels every transfer of one bulk send, in flight or queued.
        case cancelOwned(BulkOwner)
        /// From now until shutdown, keep a connection to `url`'s host open (``keepWarm(url:)``).
        case keepWarm(url: String)
        /// A job of a task that prefers this loop as its executor (``enqueue(_:)``).
        case run(UnownedJob)
    }

    /// Where the loop is in its life.
    private enum Phase {
        case running
        /// Takes no new requests; finishes those it has until the deadline, then fails the rest.
        case draining(until: ContinuousClock.Instant)
        /// libcurl is cleaned up (or being); nothing may touch the multi handle.
        case stopped
    }

    private struct Inbox {
        var operations: [Operation] = []
        var phase = Phase.running
        var started = false
        var exited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var connectionsOpened = 0
        var stalledConnectionsClosed = 0
        /// Easy handles that exist (in libcurl or idle), for the soak's memory figures.
        var easyHandles = 0
        var circuitTrips = 0
        /// The loop is (about to be) asleep in `curl_multi_poll`: a submit must wake it.
        var sleeping = false
        /// A wake-up was already sent since the loop went to sleep.
        var wakePending = false

        var acceptsWork: Bool {
            if case .running = phase { return true }
            return false
        }
    }

    private let settings: Settings
    private let inbox = Locked(Inbox())
    private let multi: UnsafeMutableRawPointer?
    /// One TLS session cache for all the loop's easy handles (`CURL_LOCK_DATA_SSL_SESSION`):
    /// without it each easy handle keeps up to five sessions of its own (on libcurl before 8.12),
    /// each holding the server's certificates, and only the handle that made a connection can
    /// resume it. Used only on the loop thread, like the easy handles, so it needs no lock
    /// callbacks; cleaned up after them.
    private let share: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    @exclusivity(unchecked) private var idle: [UnsafeMutableRawPointer] = []
    /// `CURLOPT_ERRORBUFFER` of each easy handle, allocated with it.
    @exclusivity(unchecked) private var handles: [UnsafeMutableRawPointer: EasyState] = [:]

    /// What the loop keeps for each easy handle: its `CURLOPT_ERRORBUFFER`, and the method, body
    /// and header list its last transfer set, which the next transfer (the next device of a bulk
    /// send) usually shares: those options are set again only when they differ. Holding them also
    /// keeps what libcurl points at alive as long as the handle does.
    private final class EasyState {
        let errorBuffer: UnsafeMutablePointer<CChar>
        @exclusivity(unchecked) var method: APNsRequest.Method?
        @exclusivity(unchecked) var body: RequestBody?
        @exclusivity(unchecked) var headerList: HeaderList?

        init() {
            errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
            errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        }

        /// After `curl_easy_reset`, nothing is set.
        func forget() {
            method = nil
            body = nil
            headerList = nil
        }

        deinit { errorBuffer.deallocate() }
    }
    /// Transfers beyond what the connections can carry wait here, in order, rather than in
    /// libcurl's own pending queue.
    @exclusivity(unchecked) private var waiting: [Transfer] = []
    @exclusivity(unchecked) private var waitingHead = 0
    /// The loop's timed checks: the waiting queue and the transfers in libcurl against their
    /// deadlines, the idle easy handles against the recent need.
    private var waitingSweep = Periodic(every: CurlMultiLoop.deadlineSweepInterval)
    private var activeSweep = Periodic(every: CurlMultiLoop.activeSweepInterval)
    private var idleTrim = Periodic(every: CurlMultiLoop.idleTrimInterval)
    /// The most transfers in libcurl at once since the idle handles were last trimmed.
    @exclusivity(unchecked) private var peakActive = 0
    /// When each connection (by local port) last delivered a response, to tell a stalled
    /// connection from a slow request.
    @exclusivity(unchecked) private var lastAnswer: [Int32: ContinuousClock.Instant] = [:]
    /// The sockets libcurl opened through this loop and has not closed.
    @exclusivity(unchecked) private var openSockets: Set<Int32> = []
    /// Local ports of connections already shut down as stalled (every transfer sees them).
    private let stalled = Transfer.StalledPorts()
    /// No connection takes new streams (none is open yet, or the last one sent GOAWAY or
    /// stalled) and none has been established since: the next request will make one.
    @exclusivity(unchecked) private var awaitingConnection = true
    /// The request configured to make that connection, without verbose mode; nil when none is.
    private weak var quietTransfer: Transfer?
    /// GOAWAY frames are watched for (``TransportConfiguration/reportsGoAway`` and someone listening).
    private let watchesGoAway: Bool
    @exclusivity(unchecked) private var breaker: CircuitBreaker?
    let maximumInFlight: Int
    /// Keep-warm (``keepWarm(url:)``): the URL a warm-up transfer asks for (its host is what
    /// counts: nothing is ever written), the one in flight, and when the next may start.
    private var warmURL: String?
    private var warmUp: Transfer?
    private var nextWarmUp = ContinuousClock.now
    private var warmUpFailures = 0
    /// An idle connection's socket became readable (a GOAWAY, a close, a keepalive failure):
    /// libcurl does not watch idle connections, so a warm-up makes it look.
    private var idleConnectionStirred = false
    /// When the last transfer ended, while keeping warm: an idle connection is replaced before
    /// libcurl would refuse to reuse it (`maximumIdleSeconds`).
    @exclusivity(unchecked) private var lastActivity = ContinuousClock.now
    /// Where ``configure(_:for:timeoutMilliseconds:)`` assembles each request's URL.
    @exclusivity(unchecked) private var urlBuffer: [UInt8] = []

    /// How often requests waiting in the queue are checked against their deadlines.
    static let deadlineSweepInterval: Duration = .milliseconds(50)
    /// How often, and how long after its deadline, a transfer inside libcurl is checked and ended
    /// by the loop itself (``sweepExpiredActive(on:now:)``).
    static let activeSweepInterval: Duration = .milliseconds(100)
    static let activeDeadlineSlack: Duration = .milliseconds(100)
    static let writtenDeadlineSlack: Duration = .milliseconds(500)
    /// How often idle easy handles beyond the recent need are freed.
    static let idleTrimInterval: Duration = .seconds(30)

    /// Throws when libcurl refuses an option the stream and connection limits rest on.
    init(settings: Settings, maximumConnectionsPerHost: Int, maximumConcurrentStreams: Int) throws(TransportError) {
        self.settings = settings
        breaker = settings.circuitBreaker.map(CircuitBreaker.init(policy:))
        watchesGoAway = settings.reportsGoAway && settings.observability.isListening(at: .notice)
        maximumInFlight = max(1, maximumConnectionsPerHost) * max(1, maximumConcurrentStreams)
        multi = curl_multi_init()
        share = curl_share_init()
        if let multi {
            do throws(RefusedOption) {
                guard let share else {
                    throw RefusedOption(option: "curl_share_init", code: 0, meaning: "out of memory")
                }
                try require(
                    ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue)),
                    "CURLSHOPT_SHARE CURL_LOCK_DATA_SSL_SESSION")
                try require(
                    ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "CURLMOPT_PIPELINING")
                try require(
                    ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, maximumConnectionsPerHost)),
                    "CURLMOPT_MAX_HOST_CONNECTIONS")
                try require(
                    ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, maximumConcurrentStreams)),
                    "CURLMOPT_MAX_CONCURRENT_STREAMS")
            } catch {
                curl_multi_cleanup(multi)
                share.map { _ = curl_share_cleanup($0) }
                throw error.error
            }
        }
    }

    var connectionsOpened: Int { inbox.withLock { $0.connectionsOpened } }
    var easyHandleCount: Int { inbox.withLock { $0.easyHandles } }

    /// Queues an operation and wakes the loop, starting its thread on first use.
    func submit(_ operation: Operation) {
        switch operation {
        case .add(let transfer): submit(batch: [transfer])
        case .cancel, .cancelOwned, .keepWarm, .run: post([operation], transfers: [])
        }
    }

    /// Until shutdown, keeps a connection to `url`'s host open and ready, writing nothing on it:
    /// one is opened now, and again whenever none is left (closed by the server, a GOAWAY, a failed
    /// keepalive) or the idle one is about to be too old to reuse. A warm-up transfer runs libcurl's
    /// connect (or its reuse check) and is stopped by the pre-request callback before any byte of
    /// a request; the connection stays in libcurl's cache for the next send. Failures are retried
    /// with back-off (1 s doubling to 60 s), and count for the circuit breaker like a send's.
    func keepWarm(url: String) {
        submit(.keepWarm(url: url))
    }

    /// Queues transfers with one lock and at most one wake-up.
    func submit(batch transfers: [Transfer]) {
        post(transfers.map(Operation.add), transfers: transfers)
    }

    /// `transfers` are the transfers among `operations`: failed at once, never sent, if the loop
    /// no longer takes work.
    private func post(_ operations: [Operation], transfers: [Transfer]) {
        guard let multi else {
            let failure = TransportError(
                kind: .other, delivery: .notSent, curlCode: 2, message: "curl_multi_init failed")
            for transfer in transfers { transfer.resume(.failure(failure)) }
            CurlMultiLoop.runElsewhere(operations)
            return
        }
        let (start, refused) = inbox.withLock { state -> (Bool, Bool) in
            guard state.acceptsWork else { return (false, true) }
            state.operations.append(contentsOf: operations)
            if !state.started {
                state.started = true
                return (true, false)
            }
            // Only a sleeping loop needs the wake-up syscall; an awake one drains the inbox before
            // it sleeps again. Made under the lock, so the multi handle cannot be cleaned up meanwhile.
            if state.sleeping && !state.wakePending {
                state.wakePending = true
                curl_multi_wakeup(multi)
            }
            return (false, false)
        }
        if refused {
            for transfer in transfers { transfer.resume(.failure(TransportError.shutDown(delivery: .notSent))) }
            CurlMultiLoop.runElsewhere(operations)
            return
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = CurlMultiLoop.threadName
            thread.start()
        }
    }

    /// Stops taking requests, lets those in flight finish for up to `gracePeriod`, then fails what
    /// is left with ``TransportError/Kind-swift.struct/shutDown`` and releases libcurl. Returns once
    /// the loop thread has finished with libcurl and OpenSSL; never blocks a thread while waiting.
    func shutdown(gracePeriod: Duration) async {
        beginShutdown(gracePeriod: gracePeriod)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { state -> Bool in
                if state.exited { return true }
                state.exitWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Starts the shutdown and returns at once (for `deinit`): the loop thread finishes on its own.
    func beginShutdown(gracePeriod: Duration) {
        guard let multi else { return }
        let cleanUpHere = inbox.withLock { state -> Bool in
            let until = ContinuousClock.now + max(gracePeriod, .zero)
            switch state.phase {
            case .running: state.phase = .draining(until: until)
            case .draining(let earlier): state.phase = .draining(until: min(earlier, until))
            case .stopped: return false
            }
            guard state.started else {
                // No thread ever ran: nothing is in flight, and nobody else can reach libcurl now.
                state.phase = .stopped
                state.exited = true
                return true
            }
            state.wakePending = true
            curl_multi_wakeup(multi)
            return false
        }
        if cleanUpHere {
            curl_multi_cleanup(multi)
            share.map { _ = curl_share_cleanup($0) }
        }
    }

    /// The loop thread's name (15 bytes: the kernel's limit), as `top -H` and `perf` show it.
    static let threadName = "swift-apns.curl"

    // MARK: Loop thread

    private func run() {
        guard let multi else { return }
        // Foundation names the `Thread` object only; operators' tools read the kernel's name.
        _ = ccurl_name_current_thread(CurlMultiLoop.threadName)
        // Outcomes of bulk sends wake their readers once per pass, not once per push.
        let wakes = DeferredWakes.install()
        defer { wakes.uninstall() }
        // What a pass writes leaves in few TCP segments, not one per libcurl write.
        let writes = CoalescedWrites.install()
        defer { writes.uninstall() }
        var running: Int32 = 0
        while true {
            var phase = Phase.running
            var ranJobs = true
            // A job (a task preferring this loop) usually submits a send: take it in this pass, once
            // (a task that only yields must not keep libcurl from running).
            for _ in 0..<2 where ranJobs {
                ranJobs = false
                let operations: [Operation]
                (operations, phase) = inbox.withLock { state -> ([Operation], Phase) in
                    state.sleeping = false
                    state.wakePending = false
                    var taken: [Operation] = []
                    swap(&taken, &state.operations)
                    return (taken, state.phase)
                }
                for operation in operations {
                    switch operation {
                    case .add(let transfer): enqueue(transfer)
                    case .cancel(let transfer): cancel(transfer, on: multi)
                    case .cancelOwned(let owner): cancelAll(ownedBy: owner, on: multi)
                    case .keepWarm(let url): warmURL = url
                    case .run(let job):
                        job.runSynchronously(on: asUnownedTaskExecutor())
                        ranJobs = true
                    }
                }
            }
            var pollLimit = Duration.seconds(1)
            if case .draining(let until) = phase {
                let now = ContinuousClock.now
                if let warmUp, !warmUp.finished { cancel(warmUp, on: multi) }  // a drain does not wait for it
                if isIdle || now >= until {
                    return stop(on: multi)
                }
                pollLimit = min(pollLimit, until - now)
            }
            sweepExpiredWaiting()
            startWaiting(on: multi)
            if !active.isEmpty { writes.begin(openSockets) }
            curl_multi_perform(multi, &running)
            writes.end()
            collectFinished(on: multi)
            let afterPerform = ContinuousClock.now
            sweepExpiredActive(on: multi, now: afterPerform)
            trimIdleHandles(now: afterPerform)
            startWaiting(on: multi)
            if warmURL != nil, case .running = phase { warmUpIfNeeded(on: multi) }
            if waitingHead < waiting.count { pollLimit = min(pollLimit, CurlMultiLoop.deadlineSweepInterval) }
            if !active.isEmpty { pollLimit = min(pollLimit, CurlMultiLoop.activeSweepInterval) }
            wakes.run()
            // A drain whose last transfer just finished ends now, not after the next poll's limit.
            if case .draining = phase, isIdle { continue }
            let sleep = inbox.withLock { state -> Bool in
                guard state.operations.isEmpty else { return false }
                state.sleeping = true
                return true
            }
            if sleep { poll(multi, upTo: pollLimit, phase: phase) }
        }
    }

    /// Nothing waits in the queue and nothing in libcurl is unfinished: a drain can end.
    private var isIdle: Bool { waitingHead == waiting.count && active.values.allSatisfy(\.finished) }

    /// Sleeps in `curl_multi_poll` until libcurl's sockets, a wake-up or `limit`; while keeping
    /// warm with nothing in flight, also until an idle connection's socket is readable.
    private func poll(_ multi: UnsafeMutableRawPointer, upTo limit: Duration, phase: Phase) {
        var limit = limit
        let keepingWarm: Bool
        if warmURL != nil, case .running = phase, warmUp == nil, active.isEmpty {
            let now = ContinuousClock.now
            if nextWarmUp > now { limit = min(limit, nextWarmUp - now) }  // the next attempt on time
            keepingWarm = nextWarmUp <= now
        } else {
            keepingWarm = false
        }
        let milliseconds = Int32(clamping: max(1, limit.millisecondsRoundedUp))
        guard keepingWarm, !openSockets.isEmpty else {
            curl_multi_poll(multi, nil, 0, milliseconds, nil)
            return
        }
        var watched = openSockets.map { curl_waitfd(fd: $0, events: Int16(CURL_WAIT_POLLIN), revents: 0) }
        curl_multi_poll(multi, &watched, UInt32(watched.count), milliseconds, nil)
        if watched.contains(where: { $0.revents != 0 }) { idleConnectionStirred = true }
    }

    /// Keep-warm: starts a warm-up transfer when nothing else would touch the connection and
    /// there is none ready (or the idle one stirred, or is about to be too old to reuse).
    private func warmUpIfNeeded(on multi: UnsafeMutableRawPointer) {
        guard let warmURL, warmUp == nil, active.isEmpty, waitingHead == waiting.count else { return }
        let now = ContinuousClock.now
        guard now >= nextWarmUp else { return }
        // libcurl refuses a connection idle for more than `maximumIdleSeconds` (whole seconds);
        // replace it a little after that, while nothing waits for it.
        let tooOld = now - lastActivity > .seconds(settings.maximumIdleSeconds + 2)
        guard awaitingConnection || idleConnectionStirred || tooOld else { return }
        idleConnectionStirred = false
        let transfer = Transfer(
            urlPrefix: warmURL, method: .get, headerList: CurlMultiLoop.noHeaders, body: CurlMultiLoop.noBody,
            deadline: now + .milliseconds(settings.connectTimeoutMilliseconds) + .seconds(1), device: nil, owner: nil)
        transfer.isWarmUp = true
        transfer.completion = .warmUp { [self] failure in warmUpEnded(failure) }
        warmUp = transfer
        transfer.queued = true
        start(transfer, on: multi)
    }

    /// A warm-up transfer ended (on the loop thread): schedules the next attempt after a failure.
    private func warmUpEnded(_ failure: TransportError?) {
        warmUp = nil
        lastActivity = .now
        guard let failure else {
            warmUpFailures = 0
            // Spaced, so a socket that stays readable cannot make the loop spin on warm-ups.
            nextWarmUp = .now + CurlMultiLoop.warmUpSpacing
            return
        }
        if failure.kind == .cancelled || failure.kind == .shutDown { return }
        warmUpFailures += 1
        let backOff = min(Duration.seconds(60), .seconds(1) * (1 << min(warmUpFailures - 1, 6)))
        let delay = backOff * Double.random(in: 0.8...1.2)
        nextWarmUp = .now + delay
        guard observability.isEnabled else { return }
        let metadata: Logger.Metadata = [
            "error.type": "\(failure.kind)", "error.message": "\(failure.message)",
            "apns.keep_warm.failures": "\(warmUpFailures)", "apns.keep_warm.retry_ms": "\(delay / .milliseconds(1))",
        ]
        if warmUpFailures == 1 {
            observability.logger.notice(
                "APNs connection could not be opened ahead of sends; trying again", metadata: metadata)
        } else {
            observability.logger.debug(
                "APNs connection could not be opened ahead of sends; trying again", metadata: metadata)
        }
    }

    /// The least time between two warm-ups.
    static let warmUpSpacing: Duration = .milliseconds(250)

    /// What a warm-up transfer carries: nothing it would ever write.
    private static let noHeaders = HeaderList(authorization: nil, headers: [])
    private static let noBody = RequestBody([])

    /// Fails everything left, releases libcurl, and tells whoever awaits the shutdown.
    private func stop(on multi: UnsafeMutableRawPointer) {
        let leftovers = inbox.withLock { state -> [Operation] in
            state.phase = .stopped
            var taken: [Operation] = []
            swap(&taken, &state.operations)
            return taken
        }
        for operation in leftovers {
            if case .add(let transfer) = operation {
                transfer.resume(.failure(TransportError.shutDown(delivery: .notSent)))
            }
        }
        CurlMultiLoop.runElsewhere(leftovers)
        for transfer in waiting[waitingHead...] {
            transfer.resume(.failure(TransportError.shutDown(delivery: transfer.delivery)))
        }
        waiting.removeAll()
        waitingHead = 0
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            transfer.resume(.failure(TransportError.shutDown(delivery: transfer.delivery)))
            curl_easy_cleanup(easy)
        }
        active.removeAll()
        idle.forEach { curl_easy_cleanup($0) }
        idle.removeAll()
        handles.removeAll()
        curl_multi_cleanup(multi)
        share.map { _ = curl_share_cleanup($0) }  // after every easy handle that used it
        DeferredWakes.current?.run()  // every outcome reaches its reader before shutdown returns
        let waiters = inbox.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.exited = true
            defer { state.exitWaiters.removeAll() }
            return state.exitWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Fails queued requests whose deadline has passed: they never reached libcurl, so they were
    /// not sent (or, after a refusal, not processed).
    private func sweepExpiredWaiting() {
        guard waitingHead < waiting.count else { return }
        let now = ContinuousClock.now
        guard waitingSweep.isDue(at: now) else { return }
        for transfer in waiting[waitingHead...] where !transfer.finished && transfer.deadline <= now {
            transfer.resume(.failure(TransportError.timedOut(delivery: transfer.delivery)))
        }
    }

    /// Ends transfers inside libcurl whose deadline has passed and which libcurl has not ended.
    ///
    /// libcurl applies a transfer's timeout only once it has a connection or a stream (7.88: a
    /// transfer pending for APNs' one stream on a new token connection, or for a TLS handshake
    /// that never finishes, waits past it). A transfer whose request was never written is ended
    /// `notSent` a little after its deadline (``activeDeadlineSlack``) and taken out of libcurl,
    /// which has written nothing of it; one that was written, which libcurl should have timed out
    /// itself, is ended `unknown` after ``writtenDeadlineSlack``. Runs after libcurl's own results
    /// are collected, so a timeout libcurl reported (with its finer judgement) comes first.
    private func sweepExpiredActive(on multi: UnsafeMutableRawPointer, now: ContinuousClock.Instant) {
        guard !active.isEmpty, activeSweep.isDue(at: now) else { return }
        var expired: [(UnsafeMutableRawPointer, Transfer)] = []
        // A transfer already ended (cancelled) but still pending in libcurl is taken out too.
        for (easy, transfer) in active {
            let slack = transfer.written ? CurlMultiLoop.writtenDeadlineSlack : CurlMultiLoop.activeDeadlineSlack
            if now >= transfer.deadline + slack { expired.append((easy, transfer)) }
        }
        for (easy, transfer) in expired {
            active.removeValue(forKey: easy)
            curl_multi_remove_handle(multi, easy)
            transfer.easy = nil
            discard(easy)  // taken out mid-way: in a state not worth reusing
            guard !transfer.finished else {
                if transfer.isProbe { record(.neutral, probe: true) }
                continue
            }
            if transfer.written { closeIfStalled(transfer) }
            let result: Result<APNsHTTPResponse, any Error> = .failure(
                TransportError.timedOut(delivery: transfer.delivery))
            if breaker != nil { record(CircuitBreaker.signal(for: result), probe: transfer.isProbe) }
            transfer.resume(result)
        }
    }

    /// Frees the idle easy handles beyond the most that were in use at once in the last
    /// ``idleTrimInterval``: a burst (a bulk send with thousands in flight, or transfers libcurl
    /// held past a fault) would otherwise keep its handles, each with its buffers, for the life
    /// of the connector. The oldest go first; the loop makes new ones when it needs them.
    private func trimIdleHandles(now: ContinuousClock.Instant) {
        guard idleTrim.isDue(at: now) else { return }
        let excess = idle.count + active.count - Swift.max(peakActive, 1)
        if excess > 0 {
            for easy in idle.prefix(excess) { discard(easy) }
            idle.removeFirst(Swift.min(excess, idle.count))
        }
        peakActive = active.count
    }

    /// A check the loop makes at most once per interval, given the pass's clock reading.
    private struct Periodic {
        let interval: Duration
        private var next = ContinuousClock.now

        init(every interval: Duration) { self.interval = interval }

        /// True when the interval has passed since it was last due (and from now on counts again).
        mutating func isDue(at now: ContinuousClock.Instant) -> Bool {
            guard now >= next else { return false }
            next = now + interval
            return true
        }
    }

    /// Moves waiting transfers into libcurl while there is room.
    private func startWaiting(on multi: UnsafeMutableRawPointer) {
        while active.count < maximumInFlight, waitingHead < waiting.count {
            let transfer = waiting[waitingHead]
            waitingHead += 1
            if !transfer.finished { start(transfer, on: multi) }
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 4096 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    private func start(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) {
        if transfer.isCancelled {
            transfer.resume(.failure(TransportError.cancelled(delivery: transfer.delivery)))
            return
        }
        // The deadline counts from the send; libcurl's own timeout counts from here.
        let remaining = transfer.deadline - ContinuousClock.now
        guard remaining > .zero else {
            transfer.resume(.failure(TransportError.timedOut(delivery: transfer.delivery)))
            return
        }
        // Mutated in place: a copy of the breaker costs more than the check.
        switch breaker?.isClosed == true ? .go : breaker?.admit(now: .now) {
        case nil, .go?: break
        case .probe?: transfer.isProbe = true
        case .reject(let error)?:
            transfer.resume(.failure(error))
            return
        }
        let easy: UnsafeMutableRawPointer
        do throws(RefusedOption) {
            var ready = idle.popLast()
            if ready == nil { ready = try makeEasy() }
            guard let ready else {
                transfer.resume(
                    .failure(
                        TransportError(
                            kind: .other, delivery: transfer.delivery, curlCode: 2, message: "curl_easy_init failed")))
                return
            }
            easy = ready
            do throws(RefusedOption) {
                try configure(easy, for: transfer, timeoutMilliseconds: remaining.millisecondsRoundedUp)
            } catch {
                discard(easy)  // in an unknown state
                throw error
            }
        } catch {
            transfer.resume(.failure(error.error))
            return
        }
        transfer.easy = easy
        transfer.stalledPorts = stalled
        let added = curl_multi_add_handle(multi, easy)
        guard added == CURLM_OK else {
            transfer.easy = nil
            recycle(easy)
            transfer.resume(
                .failure(
                    TransportError(
                        kind: .other, delivery: transfer.delivery, curlCode: Int(added.rawValue),
                        message: String(cString: curl_multi_strerror(added)))))
            return
        }
        active[easy] = transfer
        if active.count > peakActive { peakActive = active.count }
    }

    /// A new easy handle with everything that is the same for every transfer set once: TLS,
    /// HTTP/2, callbacks, its error buffer.
    private func makeEasy() throws(RefusedOption) -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        let state = EasyState()
        handles[easy] = state
        inbox.withLock { $0.easyHandles += 1 }
        do throws(RefusedOption) {
            try configureOnce(easy, errorBuffer: state.errorBuffer)
        } catch {
            discard(easy)
            throw error
        }
        return easy
    }

    /// Everything that is the same for every transfer on `easy`. Every option a guarantee rests on
    /// is checked (``RefusedOption``); only the GOAWAY watch's verbose channel may be refused
    /// quietly (it reports, it guarantees nothing).
    private func configureOnce(
        _ easy: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>
    ) throws(RefusedOption) {
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_SHARE, share), "CURLOPT_SHARE")
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "CURLOPT_HTTP_VERSION")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1), "CURLOPT_SSL_VERIFYPEER")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2), "CURLOPT_SSL_VERIFYHOST")
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds),
            "CURLOPT_CONNECTTIMEOUT_MS")
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_MAXAGE_CONN, settings.maximumIdleSeconds), "CURLOPT_MAXAGE_CONN")
        if let keepAlive = settings.tcpKeepAliveSeconds {
            try require(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
            try require(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPIDLE, keepAlive), "CURLOPT_TCP_KEEPIDLE")
            try require(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPINTVL, keepAlive), "CURLOPT_TCP_KEEPINTVL")
        }
        if let ca = settings.trustedCA {
            try require(
                ca.withUnsafeBytes { ccurl_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) },
                "CURLOPT_CAINFO_BLOB")
        }
        if let identity = settings.identity {
            try require(
                identity.certificateChainPEM.withUnsafeBytes {
                    ccurl_easy_setopt_blob(easy, CURLOPT_SSLCERT_BLOB, $0.baseAddress, $0.count)
                },
                "CURLOPT_SSLCERT_BLOB")
            try require(
                identity.privateKeyPEM.withUnsafeBytes {
                    ccurl_easy_setopt_blob(easy, CURLOPT_SSLKEY_BLOB, $0.baseAddress, $0.count)
                },
                "CURLOPT_SSLKEY_BLOB")
            try require(ccurl_easy_setopt_string(easy, CURLOPT_SSLCERTTYPE, "PEM"), "CURLOPT_SSLCERTTYPE")
            try require(ccurl_easy_setopt_string(easy, CURLOPT_SSLKEYTYPE, "PEM"), "CURLOPT_SSLKEYTYPE")
        }
        try require(
            ccurl_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                let length = size * count
                guard let data, let context else { return length }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                transfer.responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
                return length
            }, "CURLOPT_WRITEFUNCTION")
        try require(
            ccurl_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                let length = size * count
                guard let data, let context else { return length }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
                return length
            }, "CURLOPT_HEADERFUNCTION")
        let loop = Unmanaged.passUnretained(self).toOpaque()
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, loop), "CURLOPT_OPENSOCKETDATA")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_CLOSESOCKETDATA, loop), "CURLOPT_CLOSESOCKETDATA")
        try require(
            ccurl_easy_setopt_opensocket(easy) { context, _, address in
                guard let context, let address else { return curl_socket_t(-1) }
                return Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue()
                    .openSocket(
                        family: address.pointee.family, type: address.pointee.socktype,
                        protocol: address.pointee.protocol)
            }, "CURLOPT_OPENSOCKETFUNCTION")
        try require(
            ccurl_easy_setopt_closesocket(easy) { context, socket in
                guard let context else { return Foundation.close(socket) }
                return Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().closeSocket(socket)
            }, "CURLOPT_CLOSESOCKETFUNCTION")
        if watchesGoAway {
            // libcurl 7.88 reports a received GOAWAY only as an informational line, which needs
            // CURLOPT_VERBOSE (set per transfer in `configure`); the callback ignores everything
            // else (headers included, so the authorization header passes through it unread and
            // unkept).
            _ = ccurl_easy_setopt_pointer(easy, CURLOPT_DEBUGDATA, loop)
            _ = ccurl_easy_setopt_debug(easy) { _, type, text, size, context in
                guard type == CURLINFO_TEXT, size >= 16, let text, let context else { return 0 }
                let line = UnsafeRawBufferPointer(start: text, count: size)
                // "recveived GOAWAY, error=%d, last_stream=%u" (sic, libcurl 7.88); later versions
                // spell it "received".
                guard line[0] == UInt8(ascii: "r"), let frame = GoAway(line) else { return 0 }
                Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().receivedGoAway(frame)
                return 0
            }
        }
        try require(
            ccurl_easy_setopt_prereq(easy) { context, _, _, _, localPort in
                guard let context else { return Int32(CURL_PREREQFUNC_OK) }
                let decision = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().willSend(
                    localPort: localPort)
                if decision == Int32(CURL_PREREQFUNC_OK) { CoalescedWrites.current?.requestWillBeWritten() }
                return decision
            }, "CURLOPT_PREREQFUNCTION")
    }

    /// Sets what differs per transfer: every such option is set each time, so nothing carries over
    /// from the handle's previous transfer, except the method, body and headers when they are the
    /// very ones that transfer had (``EasyState``).
    private func configure(
        _ easy: UnsafeMutableRawPointer, for transfer: Transfer, timeoutMilliseconds: Int
    ) throws(RefusedOption) {
        let state = handles[easy]
        state?.errorBuffer.pointee = 0
        transfer.errorBuffer = state?.errorBuffer
        if watchesGoAway {
            // libcurl gives a connection made by a verbose transfer a TLS trace callback that
            // formats a line for every TLS record for the connection's whole life (most of verbose
            // mode's cost, about 7 % CPU per push); a connection made by a quiet transfer never has
            // it. So the request that will make the next connection is configured quietly, and
            // every other request verbosely: those wait for that connection (CURLOPT_PIPEWAIT)
            // and report any GOAWAY it sends.
            let quiet = awaitingConnection && quietTransfer.map { $0.finished } != false
            if quiet { quietTransfer = transfer }
            _ = ccurl_easy_setopt_long(easy, CURLOPT_VERBOSE, quiet ? 0 : 1)
        }
        // libcurl copies the URL; it is assembled in one reused buffer (no string per push).
        urlBuffer.removeAll(keepingCapacity: true)
        urlBuffer.append(contentsOf: transfer.urlPrefix.utf8)
        urlBuffer.append(contentsOf: transfer.urlSuffix.utf8)
        urlBuffer.append(0)
        try require(
            urlBuffer.withUnsafeBytes {
                ccurl_easy_setopt_string(easy, CURLOPT_URL, $0.bindMemory(to: CChar.self).baseAddress)
            },
            "CURLOPT_URL")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, timeoutMilliseconds)), "CURLOPT_TIMEOUT_MS")
        if let state, state.method == transfer.method, state.body === transfer.body {
            // The same request as the handle's last transfer: method and body are set.
        } else {
            state?.method = nil  // until all of it is set
            try setMethodAndBody(easy, for: transfer)
            state?.method = transfer.method
            state?.body = transfer.body
        }
        if state == nil || state?.headerList !== transfer.headerList {
            state?.headerList = nil
            try require(
                ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, transfer.headerList.list), "CURLOPT_HTTPHEADER")
            state?.headerList = transfer.headerList
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context), "CURLOPT_WRITEDATA")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context), "CURLOPT_HEADERDATA")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, context), "CURLOPT_PREREQDATA")
    }

    private func setMethodAndBody(_ easy: UnsafeMutableRawPointer, for transfer: Transfer) throws(RefusedOption) {
        func setBody() throws(RefusedOption) {
            try require(ccurl_easy_setopt_long(easy, CURLOPT_POST, 1), "CURLOPT_POST")
            try require(
                ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.body.count)),
                "CURLOPT_POSTFIELDSIZE_LARGE")
            try require(
                ccurl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, transfer.body.bytes.baseAddress),
                "CURLOPT_POSTFIELDS")
        }
        switch transfer.method {
        case .post:
            try require(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil), "CURLOPT_CUSTOMREQUEST")
            try setBody()
        case .get:
            try require(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil), "CURLOPT_CUSTOMREQUEST")
            try require(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        default:
            if transfer.body.count > 0 {
                try setBody()
            } else {
                try require(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
            }
            try require(
                ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, transfer.method.rawValue), "CURLOPT_CUSTOMREQUEST"
            )
        }
    }

    /// Completes `transfer` as cancelled at once. A request already written is withdrawn from its
    /// connection (its stream reset); one not yet written stays with libcurl, which may still be
    /// resolving or connecting for it — removing it then could block this thread on the resolver —
    /// and is aborted by the pre-request callback before any byte is written.
    private func cancel(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) {
        guard !transfer.finished else { return }
        transfer.cancelled = true
        if let easy = transfer.easy, transfer.written, active.removeValue(forKey: easy) != nil {
            curl_multi_remove_handle(multi, easy)
            recycle(easy)
            transfer.easy = nil
            transfer.resume(.failure(TransportError.cancelled(delivery: .unknown)))
        } else if transfer.queued {
            transfer.resume(.failure(TransportError.cancelled(delivery: .notSent)))
        }
        // Otherwise its `add` has not been processed yet; `enqueue` sees `cancelled`.
    }

    private func cancelAll(ownedBy owner: BulkOwner, on multi: UnsafeMutableRawPointer) {
        owner.cancel()
        for transfer in Array(active.values) where transfer.owner === owner { cancel(transfer, on: multi) }
        for transfer in waiting[waitingHead...] where transfer.owner === owner { cancel(transfer, on: multi) }
    }

    private func enqueue(_ transfer: Transfer) {
        if transfer.isCancelled {
            transfer.resume(.failure(TransportError.cancelled(delivery: .notSent)))
            return
        }
        transfer.queued = true
        waiting.append(transfer)
    }

    private func collectFinished(on multi: UnsafeMutableRawPointer) {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            finish(easy, code: message.pointee.data.result, on: multi)
        }
    }

    private func finish(_ easy: UnsafeMutableRawPointer, code: CURLcode, on multi: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, easy)
        var connects = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        if connects > 0 {
            inbox.withLock { $0.connectionsOpened += connects }
            awaitingConnection = false
            quietTransfer = nil
            connectionEstablished(easy, count: connects, code: code)
        }
        guard let transfer = active.removeValue(forKey: easy) else {
            recycle(easy)
            return
        }
        transfer.easy = nil
        transfer.errorBuffer = nil
        // libcurl counts its re-sends on the easy handle (`state.retrycount`) and resets the count
        // only in curl_easy_reset: a handle that went through one is reset and configured again, or
        // later refusals would find libcurl's budget spent.
        var reusable = true
        if transfer.attempts > 1 {
            curl_easy_reset(easy)
            if let state = handles[easy] {
                state.forget()
                do throws(RefusedOption) { try configureOnce(easy, errorBuffer: state.errorBuffer) } catch {
                    reusable = false
                }
            }
        }
        defer { if reusable { recycle(easy) } else { discard(easy) } }
        if warmURL != nil { lastActivity = .now }
        guard !transfer.finished else {
            // Cancelled or timed out while libcurl had it.
            if transfer.isProbe { record(.neutral, probe: true) }
            return
        }
        if transfer.isWarmUp {
            // It stops itself at the pre-request callback: ready means it got there over HTTP/2.
            if transfer.retry == .warmedUp {
                if breaker != nil { record(.healthy, probe: transfer.isProbe) }
                transfer.resumeWarmedUp()
                return
            }
            let failure =
                transfer.retry == .notHTTP2
                ? TransportError.notHTTP2NothingWritten
                : Transfer.failure(code: code, message: errorMessage(of: easy, code: code), delivery: .notSent)
            if breaker != nil { record(CircuitBreaker.signal(for: .failure(failure)), probe: transfer.isProbe) }
            transfer.resume(.failure(failure))
            return
        }
        let result: Result<APNsHTTPResponse, any Error>
        if code == CURLE_OK {
            var status = 0
            var version = 0
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            if transfer.negotiatedH2 {
                version = Int(CURL_HTTP_VERSION_2_0)
            } else {
                _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            }
            if version == Int(CURL_HTTP_VERSION_2_0) {
                if transfer.localPort != 0 { lastAnswer[transfer.localPort] = .now }
                result = .success(
                    APNsHTTPResponse(status: status, headers: transfer.responseHeaders, body: transfer.responseBody))
            } else {
                result = .failure(
                    TransportError(
                        kind: .notHTTP2, delivery: .unknown,
                        message: "the server answered over HTTP/1.1 (it offered no ALPN h2)"))
            }
        } else {
            switch transfer.retry {
            case .refused?, .stalledConnection?:
                // The server refused the stream before processing it, or the request was stopped
                // before it was written to a connection shut down as stalled: sending it again
                // cannot duplicate it. It is queued again until its deadline. (An HTTP/2 refusal
                // is an answer: for the circuit breaker, the path to APNs works.)
                let refused = transfer.retry == .refused
                if transfer.isProbe { record(refused ? .healthy : .neutral, probe: true) }
                transfer.prepareForResubmission()
                transfer.resubmissions += 1
                if observability.isEnabled, refused {
                    observability.retried(.refusedStream)
                    observability.logger.debug(
                        "APNs refused the stream before processing it; sending it again",
                        metadata: ["apns.resubmissions": "\(transfer.resubmissions)"])
                }
                if ContinuousClock.now < transfer.deadline, transfer.resubmissions <= Transfer.maximumResubmissions {
                    waiting.append(transfer)
                } else {
                    transfer.resume(.failure(TransportError.timedOut(delivery: .notSent)))
                }
                return
            case .connectionDied?:
                result = .failure(TransportError.connectionLost(curlCode: Int(code.rawValue)))
            case .cancelled?:
                result = .failure(TransportError.cancelled(delivery: .notSent))
            case .notHTTP2?:
                result = .failure(TransportError.notHTTP2NothingWritten)
            case .warmedUp?:  // only a warm-up stops there, and it returned above
                result = .failure(
                    TransportError(kind: .other, delivery: .notSent, message: "stopped before anything was written"))
            case nil:
                if code == CURLE_OPERATION_TIMEDOUT,
                    transfer.wasRefusedBeforeTimingOut(easy, errorBuffer: handles[easy]?.errorBuffer)
                {
                    // Refused, then re-sent by libcurl, and the re-send found no connection in time.
                    result = .failure(TransportError.timedOut(delivery: .notSent))
                    break
                }
                if code == CURLE_OPERATION_TIMEDOUT, transfer.written { closeIfStalled(transfer) }
                let message = errorMessage(of: easy, code: code)
                if transfer.written, transfer.localPort != 0, !hasOpenSocket(localPort: transfer.localPort) {
                    // The connection the request was written on is closed and never answered it.
                    // What libcurl reports last (a timeout or connect error while it waited for a
                    // new connection, the framing layer giving up) does not change that.
                    result = .failure(TransportError.connectionLost(curlCode: Int(code.rawValue), then: message))
                } else {
                    result = .failure(Transfer.failure(code: code, message: message, delivery: transfer.delivery))
                }
            }
        }
        if breaker != nil { record(CircuitBreaker.signal(for: result), probe: transfer.isProbe) }
        transfer.resume(result)
    }

    private func record(_ signal: CircuitBreaker.Signal, probe: Bool) {
        guard let steady = breaker?.isSteady else { return }
        if steady, !probe {
            switch signal {
            case .healthy, .neutral: return  // nothing to count
            case .failing: break
            }
        }
        let trips = breaker?.trips ?? 0
        let wasClosed = breaker?.isClosed ?? true
        breaker?.record(signal, probe: probe, now: .now)
        guard let breaker else { return }
        if breaker.trips != trips {
            inbox.withLock { $0.circuitTrips = breaker.trips }
            if observability.isEnabled {
                observability.circuitTrips.increment()
                observability.logger.notice(
                    "APNs circuit breaker opened: failing sends at once until a probe succeeds",
                    metadata: [
                        "apns.circuit.last_failure": "\(breaker.lastFailure)",
                        "apns.circuit.cool_down_ms": "\(breaker.coolDown.map { $0 / .milliseconds(1) } ?? 0)",
                    ])
            }
        } else if !wasClosed, breaker.isClosed, observability.isEnabled {
            observability.logger.info("APNs circuit breaker closed: a probe got an answer")
        }
    }

    private var observability: Observability { settings.observability }

    /// A transfer finished that opened `count` connections: log each one's set-up.
    private func connectionEstablished(_ easy: UnsafeMutableRawPointer, count: Int, code: CURLcode) {
        guard observability.isEnabled else { return }
        observability.connectionsOpened.increment(by: Int64(count))
        guard observability.logger.logLevel <= .info else { return }
        var connect: curl_off_t = 0
        var handshake: curl_off_t = 0
        var port = 0
        var address: UnsafeMutableRawPointer?
        _ = ccurl_easy_getinfo_off_t(easy, CURLINFO_CONNECT_TIME_T, &connect)
        _ = ccurl_easy_getinfo_off_t(easy, CURLINFO_APPCONNECT_TIME_T, &handshake)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_PRIMARY_PORT, &port)
        _ = ccurl_easy_getinfo_pointer(easy, CURLINFO_PRIMARY_IP, &address)
        let host = address.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
        var metadata: Logger.Metadata = [
            "server.address": "\(host)", "server.port": "\(port)",
            "apns.connect_ms": "\(Double(connect) / 1000)",
        ]
        if handshake > 0 {
            metadata["apns.tls_ms"] = "\(Double(handshake) / 1000)"
            observability.logger.info("APNs connection established (TLS, HTTP/2)", metadata: metadata)
        } else {
            metadata["curl.code"] = "\(code.rawValue)"
            observability.logger.info("APNs connection opened; TLS was not established", metadata: metadata)
        }
    }

    /// Times the circuit breaker opened.
    var circuitTrips: Int { inbox.withLock { $0.circuitTrips } }

    /// A written request timed out. If its connection answered nothing since the request was
    /// written, the connection is stalled (a server or middlebox that stopped answering): libcurl
    /// would keep using it for every later request, since a stream timeout does not close an
    /// HTTP/2 connection. Shutting its socket down makes libcurl fail what is on it (written, so
    /// `unknown`) and open a new connection for what comes next.
    private func closeIfStalled(_ transfer: Transfer) {
        let port = transfer.localPort
        guard port != 0 else { return }
        // Silence is how long nothing has been answered on the connection, judged against how long
        // this request waited: an answer to any request in the last half of that wait means the
        // connection still works (slow, not stalled). Whether something was answered after this
        // request was written says nothing: a connection that answered ten requests and then went
        // silent would be found one timeout late.
        let now = ContinuousClock.now
        if let last = lastAnswer[port], now - last < (now - transfer.writtenAt) / 2 { return }
        guard !stalled.ports.contains(port), let socket = openSockets.first(where: { localPort(of: $0) == port }) else {
            return
        }
        stalled.ports.insert(port)
        awaitingConnection = true
        _ = Foundation.shutdown(socket, Int32(SHUT_RDWR))
        inbox.withLock { $0.stalledConnectionsClosed += 1 }
        if observability.isEnabled {
            observability.connectionsStalled.increment()
            observability.logger.notice(
                "APNs connection stalled: a request timed out with nothing answered since it was written; closing it",
                metadata: ["apns.connection.local_port": "\(port)"])
        }
    }

    /// Whether a socket libcurl opened and has not closed is bound to `localPort` (a connection
    /// shut down as stalled still counts until libcurl closes it).
    private func hasOpenSocket(localPort port: Int32) -> Bool {
        openSockets.contains { localPort(of: $0) == port }
    }

    /// The local port a socket is bound to, or 0.
    private func localPort(of socket: Int32) -> Int32 {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { return 0 }
        let port: UInt16
        switch Int32(address.ss_family) {
        case AF_INET: port = withUnsafeBytes(of: &address) { $0.load(as: sockaddr_in.self).sin_port }
        case AF_INET6: port = withUnsafeBytes(of: &address) { $0.load(as: sockaddr_in6.self).sin6_port }
        default: return 0
        }
        return Int32(UInt16(bigEndian: port))
    }

    /// `CURLOPT_OPENSOCKETFUNCTION`, on the loop thread: opens the socket libcurl asks for and
    /// remembers it, so a stalled connection can be found by its local port.
    fileprivate func openSocket(family: Int32, type: Int32, protocol: Int32) -> Int32 {
        let socket = Foundation.socket(family, type, `protocol`)
        if socket >= 0 {
            openSockets.insert(socket)
            if observability.isEnabled {
                observability.connectionsOpen.increment()
                observability.logger.debug("APNs connection opening", metadata: ["apns.connection.socket": "\(socket)"])
            }
        }
        return socket
    }

    /// `CURLOPT_CLOSESOCKETFUNCTION`, on the loop thread.
    fileprivate func closeSocket(_ socket: Int32) -> Int32 {
        let port = localPort(of: socket)
        let wasOpen = openSockets.remove(socket) != nil
        CoalescedWrites.current?.forget(socket)
        if wasOpen, openSockets.isEmpty { awaitingConnection = true }
        if wasOpen, observability.isEnabled {
            observability.connectionsOpen.decrement()
            observability.logger.info(
                "APNs connection closed",
                metadata: ["apns.connection.socket": "\(socket)", "apns.connection.local_port": "\(port)"])
        }
        lastAnswer[port] = nil
        stalled.ports.remove(port)
        return Foundation.close(socket)
    }

    /// libcurl's debug callback, on the loop thread: the server sent GOAWAY on a connection.
    fileprivate func receivedGoAway(_ frame: GoAway) {
        awaitingConnection = true
        observability.goaways.increment()
        observability.logger.notice(
            "APNs sent GOAWAY: the connection takes no new streams; later requests go on a new connection",
            metadata: ["http2.error_code": "\(frame.errorCode)", "http2.last_stream_id": "\(frame.lastStreamID)"])
    }

    /// Connections closed because they stopped answering.
    var stalledConnectionsClosed: Int { inbox.withLock { $0.stalledConnectionsClosed } }

    /// libcurl's detail for the last failure of `easy`, or, when it wrote none, what `code` means.
    private func errorMessage(of easy: UnsafeMutableRawPointer, code: CURLcode) -> String {
        let detail = handles[easy].map { String(cString: $0.errorBuffer) } ?? ""
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }

    /// Keeps a finished easy handle, still configured, for the next transfer.
    private func recycle(_ easy: UnsafeMutableRawPointer) {
        if idle.count < 4096 {
            idle.append(easy)
        } else {
            discard(easy)
        }
    }

    private func discard(_ easy: UnsafeMutableRawPointer) {
        curl_easy_cleanup(easy)
        handles.removeValue(forKey: easy)
        inbox.withLock { $0.easyHandles -= 1 }
    }
}

/// A GOAWAY frame as libcurl's informational line describes it.
struct GoAway: Equatable {
    var errorCode: UInt32
    var lastStreamID: UInt32

    /// Parses `r[e]c[v]eived GOAWAY, error=N, last_stream=M`; nil for any other line.
    init?(_ line: UnsafeRawBufferPointer) {
        let goaway = Array("GOAWAY, error=".utf8)
        guard line.count < 256, let start = GoAway.find(goaway, in: line, from: 0), start <= 12 else { return nil }
        guard let (error, afterError) = GoAway.number(in: line, from: start + goaway.count) else { return nil }
        let last = Array("last_stream=".utf8)
        guard let lastStart = GoAway.find(last, in: line, from: afterError),
            let (stream, _) = GoAway.number(in: line, from: lastStart + last.count)
        else { return nil }
        errorCode = error
        lastStreamID = stream
    }

    private static func find(_ needle: [UInt8], in line: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard line.count >= needle.count, start <= line.count - needle.count else { return nil }
        for index in start...(line.count - needle.count) where line[index] == needle[0] {
            if needle.indices.allSatisfy({ line[index + $0] == needle[$0] }) { return index }
        }
        return nil
    }

    private static func number(in line: UnsafeRawBufferPointer, from start: Int) -> (UInt32, Int)? {
        var value: UInt64 = 0
        var index = start
        while index < line.count, (48...57).contains(line[index]), value <= UInt64(UInt32.max) {
            value = value * 10 + UInt64(line[index] - 48)
            index += 1
        }
        guard index > start, value <= UInt64(UInt32.max) else { return nil }
        return (UInt32(value), index)
    }
}

// MARK: Task executor

extension CurlMultiLoop: TaskExecutor {
    /// Runs `job` on the loop thread at the start of its next pass (waking it if it sleeps), or,
    /// once the loop takes no more work, on the global concurrent executor.
    func enqueue(_ job: consuming ExecutorJob) {
        post([.run(UnownedJob(job))], transfers: [])
    }

    /// Jobs the loop will not run (it has stopped, or is draining) run on the global concurrent
    /// executor instead: a task that prefers the loop is never stranded.
    fileprivate static func runElsewhere(_ operations: [Operation]) {
        for case .run(let job) in operations {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }
}
