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
/// `@unchecked Sendable`: `multi`, `active`, `idle`, `waiting`, `handles` and the sockets libcurl
/// watches are touched only on the loop thread (after `init`, which runs before the thread starts,
/// or, if the thread never started, by the one `shutdown` call that finds it so); shared state is in
/// the `inbox` mutex, and any thread may signal the wake-up pipe.
/// Every function that must run on the loop thread says so with ``assertOnLoopThread()``, which
/// debug builds (and so every test run) check.
/// The loop-thread state on the send path is marked `@exclusivity(unchecked)`: one thread touches
/// it, libcurl calls back only from inside `curl_multi_*` calls the loop makes outside any access
/// to those properties, so no two accesses can overlap, and the dynamic check cost about 80
/// instructions an access, on every push.
///
/// The class is split by concern: this file holds its state and what other threads call; the
/// loop's passes and queue (`+Pass`), libcurl's sockets and the sleep (`+Sockets`), easy handles
/// (`+EasyHandles`), outcomes and the circuit breaker (`+Outcomes`), connections, stalls and GOAWAY
/// (`+Connections`) and keep-warm (`+KeepWarm`) are extensions in their own files. Loop-thread
/// state is internal only so those files can share it; nothing outside them touches it.
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
    }

    let settings: Settings
    let inbox = Locked(Inbox())
    let multi: UnsafeMutableRawPointer?
    /// One TLS session cache for all the loop's easy handles (`CURL_LOCK_DATA_SSL_SESSION`):
    /// without it each easy handle keeps up to five sessions of its own (on libcurl before 8.12),
    /// each holding the server's certificates, and only the handle that made a connection can
    /// resume it. Used only on the loop thread, like the easy handles, so it needs no lock
    /// callbacks; cleaned up after them.
    let share: UnsafeMutableRawPointer?
    @exclusivity(unchecked) var active: [UnsafeMutableRawPointer: Transfer] = [:]
    @exclusivity(unchecked) var idle: [UnsafeMutableRawPointer] = []
    /// `CURLOPT_ERRORBUFFER` of each easy handle, allocated with it.
    @exclusivity(unchecked) var handles: [UnsafeMutableRawPointer: EasyState] = [:]

    /// What the loop keeps for each easy handle: its `CURLOPT_ERRORBUFFER`; the method, body and
    /// header list its last transfer set, which the next transfer (the next device of a bulk send)
    /// usually shares: those options are set again only when they differ; and its parsed URL
    /// (``setURL(_:_:pathOffset:of:state:)``). Holding them also keeps what libcurl points at
    /// alive as long as the handle does.
    final class EasyState {
        let errorBuffer: UnsafeMutablePointer<CChar>
        @exclusivity(unchecked) var method: APNsRequest.Method?
        @exclusivity(unchecked) var body: RequestBody?
        @exclusivity(unchecked) var headerList: HeaderList?
        /// The handle's URL handle (`CURLU`, nil if libcurl could not make one), and the origin it
        /// holds while it is set as the easy handle's `CURLOPT_CURLU` (nil while it is not).
        let parsedURL: OpaquePointer? = curl_url()
        @exclusivity(unchecked) var parsedOrigin: String?

        init() {
            errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
            errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        }

        /// After `curl_easy_reset`, nothing is set.
        func forget() {
            method = nil
            body = nil
            headerList = nil
            parsedOrigin = nil
        }

        /// After the easy handle's `curl_easy_cleanup` (``discard(_:)``, shutdown).
        deinit {
            errorBuffer.deallocate()
            curl_url_cleanup(parsedURL)
        }
    }
    /// Transfers beyond what the connections can carry wait here, in order, rather than in
    /// libcurl's own pending queue.
    @exclusivity(unchecked) var waiting: [Transfer] = []
    @exclusivity(unchecked) var waitingHead = 0
    /// The loop's timed checks: the waiting queue and the transfers in libcurl against their
    /// deadlines, the idle easy handles against the recent need.
    var waitingSweep = Periodic(every: CurlMultiLoop.deadlineSweepInterval)
    var activeSweep = Periodic(every: CurlMultiLoop.activeSweepInterval)
    /// While anything is in flight, every transfer in libcurl runs at least this often
    /// (``runLibcurl(_:)``).
    var everyTransfer = Periodic(every: CurlMultiLoop.activeSweepInterval)
    var idleTrim = Periodic(every: CurlMultiLoop.idleTrimInterval)
    var memoryTrim: Periodic?
    /// The most transfers in libcurl at once since the idle handles were last trimmed.
    @exclusivity(unchecked) var peakActive = 0
    /// When each connection (by local port) last delivered a response, to tell a stalled
    /// connection from a slow request.
    @exclusivity(unchecked) var lastAnswer: [Int32: ContinuousClock.Instant] = [:]
    /// The transfers libcurl reported done in the current pass (kept for its capacity).
    @exclusivity(unchecked) var finishedInPass: [(UnsafeMutableRawPointer, CURLcode)] = []
    /// The sockets libcurl opened through this loop and has not closed.
    @exclusivity(unchecked) var openSockets: Set<Int32> = []
    /// The sockets libcurl waits on, with what it waits for (poll(2)'s events), as its socket
    /// callback said; those poll(2) found ready, for the next pass; the set poll(2) is given (kept
    /// for its capacity); and when libcurl's timer is due (nil: none is set).
    @exclusivity(unchecked) var watched: [Int32: Int16] = [:]
    @exclusivity(unchecked) var ready: [Int32] = []
    @exclusivity(unchecked) var pollSet: [pollfd] = []
    @exclusivity(unchecked) var timerDue: ContinuousClock.Instant?
    /// The next pass runs every transfer in libcurl (a connection closed), as it does once per
    /// ``activeSweepInterval`` while any is in flight (``runLibcurl(_:)``).
    @exclusivity(unchecked) var runEveryTransfer = false
    /// Wakes the loop from poll(2).
    let wake: WakePipe
    /// Local ports of connections already shut down as stalled, or being retired (every transfer
    /// sees them).
    let stalled = Transfer.StalledPorts()
    /// Local ports of connections APNs tied to another key (``retireTiedToAnotherKey(port:)``):
    /// nothing new starts until the requests written on them are answered; then they are closed.
    @exclusivity(unchecked) var retiring: Set<Int32> = []
    /// No connection takes new streams (none is open yet, or the last one sent GOAWAY or
    /// stalled) and none has been established since: the next request will make one.
    @exclusivity(unchecked) var awaitingConnection = true
    /// The request configured to make that connection, without verbose mode; nil when none is.
    weak var quietTransfer: Transfer?
    /// GOAWAY frames are watched for (``TransportConfiguration/reportsGoAway`` and someone listening).
    let watchesGoAway: Bool
    let breaker: CircuitBreaker?
    let maximumInFlight: Int
    /// The pool's size and each connection's stream limit, as configured.
    let connectionsPerHost: Int
    let streamsPerConnection: Int
    /// The stream limit libcurl applies now when it picks a connection for a request (see
    /// ``spreadOverConnections(on:)``).
    @exclusivity(unchecked) var streamLimit: Int
    /// Keep-warm (``keepWarm(origin:)``): the origin a warm-up transfer asks for `/` of (its host is
    /// what counts: nothing is ever written), the one in flight, and when the next may start.
    var warmOrigin: String?
    var warmUp: Transfer?
    var keepWarmSchedule = KeepWarmSchedule(startingAt: .now)
    /// An idle connection's socket became readable (a GOAWAY, a close, a keepalive failure):
    /// libcurl does not watch idle connections, so a warm-up makes it look.
    var idleConnectionStirred = false
    /// When the last transfer in flight ended: where an idle period starts. libcurl refuses to
    /// reuse a connection idle for longer than `maximumIdleSeconds`; keep-warm replaces it.
    @exclusivity(unchecked) var lastActivity = ContinuousClock.now
    /// Where ``configure(_:for:timeoutMilliseconds:)`` assembles each request's URL.
    @exclusivity(unchecked) var urlBuffer: [UInt8] = []

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
        connectionsPerHost = max(1, maximumConnectionsPerHost)
        streamsPerConnection = max(1, maximumConcurrentStreams)
        streamLimit = streamsPerConnection
        maximumInFlight = connectionsPerHost * streamsPerConnection
        memoryTrim = settings.memoryTrimInterval.map { Periodic(every: $0, startingAfterOne: true) }
        guard let wake = WakePipe() else {
            throw TransportError(
                kind: .other, delivery: .notSent, curlCode: 0,
                message: "the transport could not open its wake-up pipe (errno \(errno)); nothing was written")
        }
        self.wake = wake
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

    /// The loop thread, once it runs (set first thing in ``run()``).
    @exclusivity(unchecked) var loopThread: pthread_t?

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
