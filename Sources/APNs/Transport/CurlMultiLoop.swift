internal import CCurl
import Foundation
import Logging

/// The thread that owns one libcurl multi handle and every easy handle on it.
///
/// Tasks hand it work through a locked inbox and wake it through a pipe (``WakePipe``); the thread
/// adds easy handles, lets libcurl act on its ready sockets and due timers
/// (`curl_multi_socket_action`, `+Sockets` says why not `curl_multi_perform`), resumes the
/// continuations of finished transfers and sleeps in poll(2). No libcurl call happens anywhere else.
///
/// Every transfer handed to it completes exactly once: with the response, or with a
/// ``TransportError`` whose ``TransportError/delivery`` says whether the request may have reached a
/// server (see ``Transfer``). Its deadline counts from when the send was made, wherever it waits.
///
/// It is also a `TaskExecutor`: a task that prefers it (``TransportConnector/taskExecutor``) runs on
/// the loop thread between passes, so a send made there, and the code after it, cross no thread.
/// Jobs wait in the same inbox as operations, in order. One the loop will no longer run (it is
/// draining or stopped) goes to the global concurrent executor instead: no task is stranded.
///
/// `@unchecked Sendable`: `multi`, `share` and the owners of the loop's state (`pool`, `queue`,
/// `connections`, `sockets`, `keepWarm`, none of them `Sendable`) are touched only on the loop
/// thread (after `init`, which runs before the thread starts, or, if the thread never started, by
/// the one `shutdown` call that finds it so); shared state is in the `inbox` mutex, and any thread
/// may signal the wake-up pipe.
/// Every function that must run on the loop thread says so with ``assertOnLoopThread()``, which
/// debug builds (and so every test run) check.
/// The loop-thread state on the send path is marked `@exclusivity(unchecked)`: one thread touches
/// it, libcurl calls back only from inside `curl_multi_*` calls the loop makes outside any access
/// to those properties, so no two accesses can overlap, and the dynamic check cost about 80
/// instructions an access, on every push.
///
/// The loop holds the owners of its state, not their fields: each concern's state is a class in a
/// file of its own that takes events and answers what to do, and changes only there
/// (``WaitingQueue``, ``HandlePool``, ``ConnectionTable``, ``SocketWatch``, ``KeepWarm``; a
/// transfer's time is a ``TransferDeadline``). The loop drives libcurl and those owners, split by
/// concern: this file holds the owners and what other threads call; the passes and the queue's
/// use (`+Pass`), libcurl's sockets and the sleep (`+Sockets`), easy handles (`+EasyHandles`),
/// outcomes and the circuit breaker (`+Outcomes`), connections, stalls and GOAWAY
/// (`+Connections`) and keep-warm (`+KeepWarm`) are extensions in their own files.
final class CurlMultiLoop: @unchecked Sendable {
    struct Settings: Sendable {
        var connectTimeoutMilliseconds: Int
        var maximumIdleSeconds: Int
        var tcpKeepAliveSeconds: Int?
        var circuitBreaker: CircuitBreakerPolicy?
        var trustedCA: [UInt8]?
        var identity: ClientIdentity?
        /// How connections reach APNs (``TransportConfiguration/proxy``), and the CA an HTTPS
        /// proxy's certificate is checked against, loaded.
        var proxy: Proxy = .environment
        /// What the environment named when the connector was made, applied when `proxy` is
        /// ``Proxy/environment``.
        var environmentProxy = Proxy.EnvironmentRoute([:])
        var proxyCA: [UInt8]?
        /// Connection events go to its logger and metrics; the logger was captured when the
        /// connector was made (task-locals do not reach this thread).
        var observability: Observability
        /// Watch for GOAWAY frames on libcurl's verbose channel (``TransportConfiguration/reportsGoAway``).
        var reportsGoAway: Bool
        /// Hand freed heap memory back to the system this often (``TransportConfiguration/memoryTrimInterval``).
        var memoryTrimInterval: Duration?
        /// The clock of the loop's own decisions (``CurlMultiLoop/clock``).
        var clock: any WaitClock = ContinuousWaitClock.shared
        /// Where the loop records how long streams stay empty (the benchmark's; nil: it does not).
        var streamIdle: StreamIdleHistogram?
    }

    enum Operation {
        case add(Transfer)
        case cancel(Transfer)
        /// Cancels every transfer of one group, in flight or queued.
        case cancelGroup(TransferGroup)
        /// From now until shutdown, keep a connection to `origin` open (``keepWarm(origin:)``).
        case keepWarm(origin: String)
        /// A job of a task that prefers this loop as its executor (``enqueue(_:)``).
        case run(UnownedJob)
    }

    /// Where the loop is in its life.
    enum Phase {
        case running
        /// Takes no new requests; finishes those it has until the deadline, then fails the rest.
        case draining(until: ContinuousClock.Instant)
        /// libcurl is cleaned up (or being); nothing may touch the multi handle.
        case stopped
    }

    struct Inbox {
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
        /// Slow spells the pool entered (``CycleWatch``).
        var slowCycles = 0
        /// Connections the pool added while slow, and took away again (``PoolGrowth``).
        var connectionsAdded = 0
        var connectionsRetired = 0
        /// Times the loop took its inbox: once or twice a pass (for tests: an idle loop sleeps).
        var inboxTakes = 0
        /// The loop is (about to be) asleep in poll(2): a submit must wake it.
        var sleeping = false
        /// A wake-up was already sent since the loop went to sleep.
        var wakePending = false

        var acceptsWork: Bool {
            if case .running = phase { return true }
            return false
        }

        /// The loop takes what was posted, at the start of a pass (and is awake).
        mutating func take() -> ([Operation], Phase) {
            sleeping = false
            inboxTakes += 1
            wakePending = false
            var taken: [Operation] = []
            swap(&taken, &operations)
            return (taken, phase)
        }

        /// The loop is about to sleep in poll(2): false when work arrived meanwhile (it runs a pass
        /// instead), else a submit from now on wakes it.
        mutating func goingToSleep() -> Bool {
            guard operations.isEmpty else { return false }
            sleeping = true
            return true
        }

        /// The loop stopped: what was posted and never taken, which the loop fails.
        mutating func stop() -> [Operation] {
            phase = .stopped
            var taken: [Operation] = []
            swap(&taken, &operations)
            return taken
        }

        /// The loop thread has finished with libcurl: who awaits that.
        mutating func exit() -> [CheckedContinuation<Void, Never>] {
            exited = true
            defer { exitWaiters.removeAll() }
            return exitWaiters
        }

        /// Counts for tests and the soak's figures: connections opened, stalled ones closed, easy
        /// handles made (positive) or freed (negative), the breaker's trips so far.
        mutating func count(
            connectionsOpened opened: Int = 0, stalledClosed: Int = 0, easyHandles handles: Int = 0,
            circuitTrips trips: Int? = nil
        ) {
            connectionsOpened += opened
            stalledConnectionsClosed += stalledClosed
            easyHandles += handles
            if let trips { circuitTrips = trips }
        }
    }

    let settings: Settings
    /// The loop thread's probe, while the connector measures idle streams (``Settings/streamIdle``).
    var streamIdleProbe: StreamIdleProbe?
    /// Whether every stream is busy and slow against the round trip (``CycleWatch``), and what the
    /// current pass's answers give it (``collectFinished(on:)``): the loop thread's alone.
    var cycleWatch: CycleWatch
    var answeredInPass: (answers: Int, fastest: Duration?) = (0, nil)
    let inbox = Locked(Inbox())
    let multi: UnsafeMutableRawPointer?
    /// One TLS session cache for all the loop's easy handles (`CURL_LOCK_DATA_SSL_SESSION`):
    /// without it each easy handle keeps up to five sessions of its own (on libcurl before 8.12),
    /// each holding the server's certificates, and only the handle that made a connection can
    /// resume it. Used only on the loop thread, like the easy handles, so it needs no lock
    /// callbacks; cleaned up after them.
    let share: UnsafeMutableRawPointer?
    /// The clock of the loop's own decisions: deadlines, keep-warm, the breaker, stalls, the grace
    /// period, the timed checks. The connector's (``TransportConfiguration`` `waitClock`): the real
    /// one, or one a test advances, which wakes the loop when it jumps. libcurl's own timer and
    /// timeouts, and the pacing of its transfers, stay on the real clock: they are libcurl's.
    let clock: any WaitClock
    /// The easy handles: the transfers in libcurl, the idle ones, what the loop keeps for each.
    let pool: HandlePool
    /// Transfers beyond what the connections can carry wait here, in order, rather than in
    /// libcurl's own pending queue.
    let queue: WaitingQueue
    /// The loop's timed checks: the transfers in libcurl against their deadlines, and handing
    /// freed memory back (``TransportConfiguration/memoryTrimInterval``).
    let activeSweep: Periodic
    let memoryTrim: Periodic?
    /// The transfers libcurl reported done in the current pass.
    let finishedInPass = FinishedInPass()
    /// The sockets and timer libcurl asks the loop to watch, what the sleep found ready, and
    /// whether the next pass runs every transfer (``runLibcurl(_:)``): on the real clock.
    let sockets = SocketWatch(everyTransferInterval: CurlMultiLoop.activeSweepInterval, startingAt: .now)
    /// Wakes the loop from poll(2).
    let wake: WakePipe
    /// The connections: open sockets, answers, stalled and retiring ones, the awaited one, the
    /// stream limit.
    let connections: ConnectionTable
    /// GOAWAY frames are watched for (``TransportConfiguration/reportsGoAway`` and someone listening).
    let watchesGoAway: Bool
    let breaker: CircuitBreaker?
    /// What the pool carries at once with every connection it may carry, added ones included
    /// (``ConnectionTable/mostStreamsInPool``, fixed, so any thread reads it here): what the
    /// connector reports (``Connector/concurrencyLimit``), so a bulk send keeps enough in flight
    /// for an added connection to carry its share. The loop's limit now is the table's
    /// ``ConnectionTable/streamsInPool``.
    let capacity: Int
    /// Keep-warm's state (``keepWarm(origin:)``), and when the last transfer in flight ended.
    let keepWarm: KeepWarm
    /// Where ``configure(_:for:timeoutMilliseconds:)`` assembles each request's URL.
    let urlBuffer = URLBuffer()

    /// How often a transfer inside libcurl is checked against its deadline and ended by the loop
    /// itself (``sweepExpiredActive(on:now:)``, ``TransferDeadline/isOverdueInLibcurl(at:written:)``).
    static let activeSweepInterval: Duration = .milliseconds(100)

    /// Throws when libcurl refuses an option the stream and connection limits rest on.
    init(
        settings: Settings, maximumConnectionsPerHost: Int, additionalConnectionsWhenSlow: Int = 0,
        maximumConcurrentStreams: Int, judgement: PoolJudgement = PoolJudgement()
    ) throws(TransportError) {
        self.settings = settings
        clock = settings.clock
        let now = clock.now
        pool = HandlePool(startingAt: now)
        queue = WaitingQueue(startingAt: now)
        activeSweep = Periodic(every: CurlMultiLoop.activeSweepInterval, startingAt: now)
        keepWarm = KeepWarm(startingAt: now)
        breaker = settings.circuitBreaker.map(CircuitBreaker.init(policy:))
        watchesGoAway = settings.reportsGoAway && settings.observability.isListening(at: .notice)
        let connectionsPerHost = max(1, maximumConnectionsPerHost)
        let streamsPerConnection = max(1, maximumConcurrentStreams)
        let most = min(
            TransportConfiguration.maximumConnectionsLimit, connectionsPerHost + max(0, additionalConnectionsWhenSlow))
        connections = ConnectionTable(
            connectionsPerHost: connectionsPerHost, streamsPerConnection: streamsPerConnection,
            additionalWhenSlow: most - connectionsPerHost, timing: judgement.timing)
        capacity = connections.mostStreamsInPool
        cycleWatch = judgement.cycleWatch
        memoryTrim = settings.memoryTrimInterval.map { Periodic(every: $0, startingAt: now, startingAfterOne: true) }
        guard let wake = WakePipe() else {
            throw TransportError(
                kind: .other, delivery: .notSent, curlCode: 0,
                message: "the transport could not open its wake-up pipe (errno \(errno)); nothing was written")
        }
        self.wake = wake
        // A test's clock that jumps wakes the loop, which judges its deadlines and timers again.
        clock.whenAdvanced { [weak wake] in wake?.signal() }
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
                    ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connectionsPerHost),
                    "CURLMOPT_MAX_HOST_CONNECTIONS")
                try require(
                    ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streamsPerConnection),
                    "CURLMOPT_MAX_CONCURRENT_STREAMS")
                try installSocketCallbacks(on: multi)
            } catch {
                curl_multi_cleanup(multi)
                share.map { _ = curl_share_cleanup($0) }
                throw error.error
            }
        }
    }

    var connectionsOpened: Int { inbox.withLock { $0.connectionsOpened } }
    var easyHandleCount: Int { inbox.withLock { $0.easyHandles } }
    var slowCycles: Int { inbox.withLock { $0.slowCycles } }
    var connectionsAdded: Int { inbox.withLock { $0.connectionsAdded } }
    var connectionsRetired: Int { inbox.withLock { $0.connectionsRetired } }

    /// Queues an operation and wakes the loop, starting its thread on first use.
    func submit(_ operation: Operation) {
        switch operation {
        case .add(let transfer): submit(batch: [transfer])
        case .cancel, .cancelGroup, .keepWarm, .run: post([operation], transfers: [])
        }
    }

    /// Until shutdown, keeps a connection to `origin` (`https://host:port`) open and ready, writing
    /// nothing on it: one is opened now, and again whenever none is left (closed by the server, a
    /// GOAWAY, a failed keepalive) or the idle one is about to be too old to reuse. A warm-up
    /// transfer runs libcurl's connect (or its reuse check) and is stopped by the pre-request
    /// callback before any byte of a request; the connection stays in libcurl's cache for the next
    /// send. Failures are retried with ``KeepWarmSchedule``'s back-off, and count for the circuit
    /// breaker like a send's.
    func keepWarm(origin: String) {
        submit(.keepWarm(origin: origin))
    }

    /// Queues transfers with one lock and at most one wake-up.
    func submit(batch transfers: [Transfer]) {
        post(transfers.map(Operation.add), transfers: transfers)
    }

    /// `transfers` are the transfers among `operations`: failed at once, never sent, if the loop
    /// no longer takes work.
    func post(_ operations: [Operation], transfers: [Transfer]) {
        guard multi != nil else {
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
            // it sleeps again.
            if state.sleeping && !state.wakePending {
                state.wakePending = true
                wake.signal()
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
            let until = clock.now + max(gracePeriod, .zero)
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
            wake.signal()
            return false
        }
        if cleanUpHere {
            curl_multi_cleanup(multi)
            share.map { _ = curl_share_cleanup($0) }
        }
    }

    /// The loop thread's name (15 bytes: the kernel's limit), as `top -H` and `perf` show it.
    static let threadName = "swift-apns.curl"

    /// The loop thread, once it runs (``claimThread()``, first thing in ``run()``).
    @exclusivity(unchecked) private(set) var loopThread: pthread_t?

    /// The calling thread becomes the loop thread.
    func claimThread() { loopThread = pthread_self() }

    /// Debug builds trap unless this runs on the loop thread: libcurl's handles and the loop-thread
    /// state (the `@exclusivity(unchecked)` properties among them) are touched nowhere else. Release
    /// builds check nothing.
    @inline(__always)
    func assertOnLoopThread(_ function: StaticString = #function) {
        assert(
            loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false,
            "CurlMultiLoop.\(function) ran off the loop thread")
    }

    /// Times the circuit breaker opened.
    var circuitTrips: Int { inbox.withLock { $0.circuitTrips } }

    /// Times the loop took its inbox (``Inbox/inboxTakes``).
    var inboxTakes: Int { inbox.withLock { $0.inboxTakes } }

    /// Connections closed because they stopped answering.
    var stalledConnectionsClosed: Int { inbox.withLock { $0.stalledConnectionsClosed } }

    var observability: Observability { settings.observability }
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
    static func runElsewhere(_ operations: [Operation]) {
        for case .run(let job) in operations {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }
}
