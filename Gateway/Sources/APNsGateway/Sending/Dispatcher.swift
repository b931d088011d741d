import APNs
import Crypto
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Sends what the queue holds: claims due device-sends under a lease, sends each notification to
/// its claimed devices through the library's bulk path (one connector, its retry policy and its
/// honest outcomes), and writes the outcomes back in batches.
///
/// A failure whose cause is upstream (APNs or the way to it unreachable, a server error, the
/// credential refused: ``UpstreamCause``) pauses sending (``UpstreamPause``): the device-sends it
/// met are queued again for the pause's end without spending an attempt, and a probe finds the
/// pause's end. A failure of the device-send's own that provably did not reach APNs (429
/// TooManyRequests for its token) is queued again with back-off, up to
/// ``Configuration/maximumAttempts``; a failure that may have been delivered (`unknown`) is final
/// and says so, so nothing is silently sent twice. A device-send is sent until its notification
/// expires (its `expiration`, or ``Configuration/maximumAge`` after it was accepted), then
/// finished as `expired`, never sent.
///
/// Thread safety: `Sendable`; ``wake()`` may be called from any task while ``run()`` runs.
public final class Dispatcher: Service, Sendable {
    /// How the dispatcher claims and sends.
    public struct Configuration: Sendable {
        /// Device-sends claimed at once.
        public var claimBatch = 2_000
        /// Batches each credential may have on the wire at once (one is claimed while the others
        /// are sent): its lane holds `concurrentBatches × claimBatch` device-sends. Each credential
        /// has its own lane, so one whose upstream is slow or hung holds only its own
        /// (``SendingLanes``).
        public var concurrentBatches = 2
        /// How long a claim is held before another sender may take it over. It is renewed every
        /// ``heartbeat`` while the sender lives, so it bounds how long a dead sender's work waits,
        /// not how long a send may take; it must outlast a send started under it
        /// (``check()``: at least ``timeout`` plus two heartbeats).
        public var lease: Duration = .seconds(120)
        /// How often a live sender records its heartbeat and renews the lease of what it holds.
        public var heartbeat: Duration = .seconds(1)
        /// How often the queue is checked when nothing woke the dispatcher (other instances'
        /// work, expired leases, back-off).
        public var pollInterval: Duration = .seconds(1)
        /// Outcomes written in one transaction, at most.
        public var writeBatch = 500
        /// Outcomes are written at least this often while a notification is being sent (one
        /// batch is written while the next is collected): what a killed sender had sent but not
        /// written (and is sent again) is at most two such batches of its sending, plus what was
        /// in flight.
        public var writeInterval: Duration = .milliseconds(100)
        /// How long a finished notification and its outcomes (and an unregistered-list entry) are
        /// kept; then they are deleted, a few hundred at a time, every ``pruneInterval``.
        public var retention: Duration = .seconds(7 * 86_400)
        /// How often finished notifications older than ``retention`` are looked for.
        public var pruneInterval: Duration = .seconds(60)
        /// An at-most-once notification's device-sends are recorded as started this many at a time,
        /// each group before any of it may be written to APNs: after a crash, at most this many
        /// times ``startGroupsInFlight`` of them are reported `unknown` without having been sent.
        public var startGroup = 100
        /// Groups of an at-most-once notification being sent at once (the next is recorded while
        /// the others are on the wire).
        public var startGroupsInFlight = 4
        /// Attempts of a device-send whose failures were all its own and provably not sent, the
        /// first included. Failures upstream (``UpstreamCause``) pause sending instead and spend
        /// none.
        public var maximumAttempts = 5
        /// How long a notification without an expiration of its own (none, or 0) is sent for after
        /// it was accepted; then what is left of it is finished as `expired`. A day: longer than
        /// any APNs outage so far, short enough that a notification is not shown a day late.
        public var maximumAge: Duration = .seconds(86_400)
        /// The library's retry policy inside one attempt.
        public var retry: RetryPolicy = .standard
        /// When a device-send refused on its own account (429 TooManyRequests) is queued again:
        /// ``maximumAttempts`` in all, one second doubling to a minute (±25 %), never sooner than
        /// APNs' `Retry-After`.
        public var requeue: RetryPolicy {
            RetryPolicy(
                maximumAttempts: maximumAttempts, initialBackoff: .seconds(1), maximumBackoff: .seconds(60),
                jitter: 0.25)
        }
        /// The deadline of each device-send.
        public var timeout: Duration = .seconds(30)
        /// The time the dispatcher decides and waits by (``GatewayClock``): the system's, unless a
        /// test gives one it advances itself.
        public var clock: any GatewayClock = SystemGatewayClock()
        /// This sender's name in claims: unique among live senders on one database (a second
        /// process that asks for the name of a live one is refused at start). Default:
        /// `gateway-`, the host name and the process id, unique per process. Whatever the name, a
        /// sender that starts takes back at once what dead senders held: those whose heartbeat
        /// stopped for a lease, and those whose process is gone from this host (a restart).
        public var instance =
            "gateway-\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"

        public init() {}

        /// Checks that the settings can work together: a lease must outlast every send started
        /// under it (the deadline), with two heartbeats to spare, or another sender could take a
        /// device-send over while it is still on the wire.
        public func check() throws(DispatcherConfigurationError) {
            guard retention > .zero, pruneInterval > .zero else {
                throw DispatcherConfigurationError(
                    "the retention (\(retention.seconds) s) and prune interval (\(pruneInterval.seconds) s) must be positive"
                )
            }
            guard startGroup > 0, startGroupsInFlight > 0 else {
                throw DispatcherConfigurationError(
                    "an at-most-once start group (\(startGroup)) and the groups in flight (\(startGroupsInFlight)) must be at least 1"
                )
            }
            guard maximumAge > .zero, maximumAttempts > 0 else {
                throw DispatcherConfigurationError(
                    "the maximum age (\(Self.text(maximumAge))) and the attempts (\(maximumAttempts)) must be positive")
            }
            guard heartbeat > .zero, lease > .zero, timeout > .zero else {
                throw DispatcherConfigurationError(
                    "the lease (\(lease.seconds) s), heartbeat (\(heartbeat.seconds) s) and send timeout (\(timeout.seconds) s) must be positive"
                )
            }
            let shortest = timeout + heartbeat * 2
            guard lease >= shortest else {
                throw DispatcherConfigurationError(
                    "a lease of \(Self.text(lease)) is shorter than the send timeout (\(Self.text(timeout))) plus two heartbeats (\(Self.text(heartbeat * 2))): another instance could take over a device-send still on the wire and send it twice. Give a lease of at least \(Self.text(shortest)), or a shorter send timeout"
                )
            }
        }

        private static func text(_ duration: Duration) -> String {
            let seconds = duration.seconds
            return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
        }
    }

    let store: any GatewayStore
    /// The connector of each app's credential and environment.
    let connectors: CredentialConnectors
    let configuration: Configuration
    let logger: Logger
    /// This sender's name in leases.
    package let owner: String
    private let wakeUps: AsyncStream<Void>
    private let wakeUpContinuation: AsyncStream<Void>.Continuation
    /// Device-sends finished or queued again, by result (accepted, rejected, failed, expired,
    /// requeued) and app.
    let results: AppCounters
    /// Unfinished device-sends, read at each poll.
    let queueDepth: Gauge
    /// 1 while a credential's sending is paused for the cause, else 0.
    let paused: PauseGauges
    /// This process's registration in the store.
    package let identity: GatewayInstance
    /// Whether a send may start: the lease as the last heartbeats left it.
    let lease: Mutex<SenderLease>
    /// Whether each credential's sending is paused for a cause upstream.
    let pauses = Mutex(CredentialPauses())
    /// Each credential's device-sends on the wire.
    let lanes: Mutex<SendingLanes>
    /// The sends started and not ended (each its notification's), awaited when the dispatcher
    /// stops: work claimed is finished first.
    private let sending = Mutex<(next: Int, tasks: [Int: Task<Void, Never>])>((0, [:]))
    /// ``Configuration/clock``.
    let clock: any GatewayClock

    /// A dispatcher that sends every app's notifications through `connector`.
    package convenience init(
        store: any GatewayStore, connector: AnyConnector, configuration: Configuration = .init(), logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.init(
            store: store, connectors: CredentialConnectors(connector, logger: logger), configuration: configuration,
            logger: logger, metricsFactory: metricsFactory)
    }

    /// A dispatcher that claims from `database` and sends each app's notifications through its
    /// connector in `connectors`: what an application that embeds the gateway runs, as a
    /// `Service`, beside ``GatewayAPI``'s server and `connectors`.
    ///
    /// - Parameters:
    ///   - connectors: Each app's connector, by its credential and the notification's environment.
    ///   - metricsFactory: Where its metrics go; nil uses `MetricsSystem.factory`.
    public convenience init(
        database: GatewayDatabase, connectors: CredentialConnectors, configuration: Configuration = .init(),
        logger: Logger, metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.init(
            store: database.store, connectors: connectors, configuration: configuration, logger: logger,
            metricsFactory: metricsFactory)
    }

    /// ``init(database:connectors:configuration:logger:metricsFactory:)`` on the package's store.
    package init(
        store: any GatewayStore, connectors: CredentialConnectors, configuration: Configuration = .init(),
        logger: Logger, metricsFactory: (any MetricsFactory)? = nil
    ) {
        let factory = metricsFactory ?? MetricsSystem.factory
        results = AppCounters(label: "apns_gateway_device_sends_total", factory: factory)
        queueDepth = Gauge(label: "apns_gateway_queue_depth", factory: factory)
        paused = PauseGauges(factory: factory)
        // The flags' credential is listed from the start, not after a first pause.
        if let fallback = connectors.fallback { paused.clear(fallback.policy.credential) }
        self.store = store
        self.connectors = connectors
        self.configuration = configuration
        self.logger = logger
        owner = configuration.instance
        clock = configuration.clock
        identity = GatewayInstance(name: configuration.instance, heartbeat: configuration.heartbeat)
        lease = Mutex(
            SenderLease(lease: configuration.lease, timeout: configuration.timeout, heartbeat: configuration.heartbeat))
        lanes = Mutex(
            SendingLanes(
                perCredential: max(1, configuration.concurrentBatches) * configuration.claimBatch,
                claimBatch: configuration.claimBatch))
        (wakeUps, wakeUpContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the dispatcher to look at the queue now (a notification was accepted).
    public func wake() { wakeUpContinuation.yield() }

    /// Whether the dispatcher sends, or waits out a cause upstream (for readiness).
    ///
    /// Paused when any credential is (the one whose probe comes first); the log and
    /// `apns_gateway_sending_paused` say which.
    package var status: SendingStatus {
        let now = clock.now
        return pauses.withLock { $0.status(at: now) }
    }

    /// Registers this sender (refused while a live one holds its name), takes back what dead
    /// senders held, then claims and sends until graceful shutdown (or cancellation), renewing
    /// its leases every ``Configuration/heartbeat``; work claimed when shutdown begins is finished
    /// first, and the registration is removed at the end.
    ///
    /// Claims go on while any credential has room in its lane (``SendingLanes``): a send is not
    /// awaited before the next claim, so one credential's hung sends never hold another's.
    public func run() async throws {
        try configuration.check()
        try await register()
        let wakeUps = self.wakeUps
        let pollInterval = configuration.pollInterval
        let continuation = wakeUpContinuation
        let clock = self.clock
        try await cancelWhenGracefulShutdown {
            try await withThrowingDiscardingTaskGroup { group in
                // Turns the poll interval into wake-ups.
                group.addTask {
                    while !Task.isCancelled {
                        try? await clock.sleep(for: pollInterval)
                        continuation.yield()
                    }
                }
                group.addTask { await self.keepLeases() }
                group.addTask { await self.pruneHistory() }
                for await _ in wakeUps {
                    // Batches overlap: one is claimed (and its outcomes written) while others are
                    // on the wire, so a connection does not idle between them; a credential whose
                    // lane is full waits for its own sends alone.
                    while await self.startLogged() > 0 {}
                    if let depth = try? await self.store.queueDepth() { self.queueDepth.record(depth) }
                }
            }
        }
        await finishSending()
        try? await store.unregister(identity)
    }

    /// Awaits every send started and not yet ended.
    private func finishSending() async {
        while true {
            let tasks = sending.withLock { Array($0.tasks.values) }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }

    /// Registers ``owner`` in the store; the start's failure when a live sender holds the name.
    ///
    /// A holder registered from this host under this process's own id is an earlier start of it
    /// (a container restarted as PID 1), dead once it has missed three heartbeats
    /// (``GatewayInstance/isEarlierStart(host:processID:incarnation:lastHeartbeat:now:)``): the
    /// start waits for that, a few seconds at most, instead of being refused.
    func register() async throws {
        var now = clock.now
        var registration = try await store.register(identity, now: now, staleAfter: configuration.lease)
        let giveUp = now + configuration.heartbeat * 4
        while case .nameInUse(let host, let processID, _) = registration,
            identity.sharesProcessID(host: host, processID: processID), clock.now < giveUp
        {
            try await clock.sleep(for: configuration.heartbeat / 2)
            now = clock.now
            registration = try await store.register(identity, now: now, staleAfter: configuration.lease)
        }
        switch registration {
        case .registered(let released):
            lease.withLock { $0.renewed(startedAt: now) }
            logger.info("registered", metadata: ["instance": "\(owner)"])
            if released > 0 {
                logger.notice(
                    "queued again what stopped instances held", metadata: ["device-sends": "\(released)"])
            }
        case .nameInUse(let host, let processID, let heartbeat):
            throw DispatcherConfigurationError(
                "another live gateway holds the instance name \(owner) (process \(processID) on \(host), heartbeat \(Int(now.timeIntervalSince(heartbeat).rounded())) s ago): give each running instance its own --instance, or leave it out for a name unique to this process"
            )
        }
    }

    /// The heartbeat: renews the lease of everything this sender holds every
    /// ``Configuration/heartbeat``. When renewals fail (the database unreachable or slow) until
    /// a send started now could outlast the lease, the sender starts no more sends and claims
    /// nothing until a renewal succeeds: what is on the wire ends by its deadline, before the lease
    /// does, and what was not started is queued again, provably unsent (or left to the lease), so
    /// another sender that takes it over never sends it a second time. When its registration is
    /// gone (another process judged it dead), it stops for good.
    private func keepLeases() async {
        let interval = configuration.heartbeat
        while !Task.isCancelled {
            try? await clock.sleep(for: interval)
            let start = clock.now
            do {
                let alive = try await store.heartbeat(identity, now: start, leaseUntil: start + configuration.lease)
                if alive {
                    lease.withLock { $0.renewed(startedAt: start) }
                } else {
                    logger.error(
                        "this instance's registration was taken over by another process: it stops sending",
                        metadata: ["instance": "\(owner)"])
                    lease.withLock { $0.takenOver() }
                }
            } catch {
                if Task.isCancelled { return }  // stopping
                logger.warning("renewing the lease failed", metadata: ["error": "\(DatabaseFailure(error))"])
            }
            let now = clock.now
            switch lease.withLock({ $0.judge(at: now) }) {
            case .paused:
                logger.error("the lease could run out before a send ends: no new sends until it is renewed")
            case .resumed:
                logger.notice("the lease is renewed: sending again")
            case nil:
                break
            }
        }
    }

    /// Deletes finished notifications older than ``Configuration/retention``, 500 at a time (each
    /// batch a short transaction), every ``Configuration/pruneInterval``.
    private func pruneHistory() async {
        while !Task.isCancelled {
            try? await clock.sleep(for: configuration.pruneInterval)
            let cutoff = clock.now - configuration.retention
            var deleted = 0
            do {
                while !Task.isCancelled {
                    let batch = try await store.deleteFinished(before: cutoff, limit: 500)
                    deleted += batch
                    if batch < 500 { break }
                    try? await clock.sleep(for: .milliseconds(10))  // let claims and writes in between
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "deleting finished notifications failed", metadata: ["error": "\(DatabaseFailure(error))"])
            }
            if deleted > 0 {
                logger.info(
                    "deleted finished notifications past their retention", metadata: ["notifications": "\(deleted)"])
            }
        }
    }

    /// Whether a send through `credential` may start now: its lease outlasts it by a heartbeat
    /// (judged at each call, so a heartbeat stuck on the database stops sends as surely as a
    /// failed one; always, when the sender was not registered by ``run()``), and the credential's
    /// sending is not paused.
    func mayStart(_ credential: String) -> Bool {
        let now = clock.now
        return lease.withLock { $0.mayStart(at: now) } && pauses.withLock { $0.mayStart(credential, at: now) }
    }

    /// ``claimAndStart()``, with a failure to claim logged (the next wake-up tries again)
    /// instead of ending the service.
    private func startLogged() async -> Int {
        do {
            return try await claimAndStart().count
        } catch {
            if Task.isCancelled {
                // Shutting down: the claim was interrupted, not failed (its lease lets it go).
                logger.debug("stopped while claiming from the queue", metadata: ["error": "\(error)"])
            } else {
                logger.error(
                    "claiming from the queue failed; trying again at the next poll",
                    metadata: ["error": "\(DatabaseFailure(error))"])
            }
            return 0
        }
    }

    /// Claims one batch due now (on ``Configuration/clock``) and sends it; returns how many
    /// device-sends it claimed, once their sends have ended.
    ///
    /// Called on its own (without ``run()``, as tests do), it claims under the lease alone: no
    /// registration and no heartbeat renews it.
    @discardableResult
    package func dispatchOnce() async throws -> Int {
        let (count, sends) = try await claimAndStart()
        for send in sends { await send.value }
        return count
    }

    /// Claims one batch due now and starts its sends, each notification's in a task of its own
    /// (returned, and awaited by ``run()`` when it stops); returns how many device-sends it
    /// claimed.
    ///
    /// The apps of a credential whose sending is paused, or whose lane has no room for a whole
    /// claim (``SendingLanes``), are left out of the claim; when a pause is over, one device-send
    /// of its apps is claimed alone, the probe (``UpstreamPause``). The other credentials' apps
    /// are claimed as usual.
    func claimAndStart() async throws -> (count: Int, sends: [Task<Void, Never>]) {
        let now = clock.now
        guard lease.withLock({ $0.mayStart(at: now) }) else { return (0, []) }
        let (paused, probes) = pauses.withLock { $0.claims(at: now) }
        let blocked = paused.union(lanes.withLock { $0.full })
        let connectors = self.connectors
        let leaseUntil = now + configuration.lease
        var claimed: [ClaimedNotification] = []
        var failure: (any Error)?
        // The probes that found something to send: each ends with its send.
        var probing: Set<String> = []
        for probe in probes {
            do {
                let found = try await store.claim(
                    owner: owner, limit: 1, now: now, leaseUntil: leaseUntil,
                    apps: AppFilter { connectors.credentialName(for: $0) == probe })
                if !found.isEmpty { probing.insert(probe) }
                claimed += found
            } catch {
                failure = error
            }
        }
        if failure == nil {
            let apps =
                blocked.isEmpty ? AppFilter.all : AppFilter { !blocked.contains(connectors.credentialName(for: $0)) }
            do {
                claimed += try await store.claim(
                    owner: owner, limit: configuration.claimBatch, now: now, leaseUntil: leaseUntil, apps: apps)
            } catch {
                failure = error
            }
        }
        // A probe that found nothing to send: the next claim probes.
        let ended = clock.now
        pauses.withLock { pauses in
            for probe in probes where !probing.contains(probe) { pauses.probeEnded(probe, at: ended) }
        }
        // Finish what was claimed even if shutdown begins meanwhile (or a later claim failed): a
        // lease left to expire would delay these sends by its length.
        let sends = claimed.map { notification in
            start(notification, credential: connectors.credentialName(for: notification.app), probe: probing)
        }
        if let failure { throw failure }
        return (claimed.reduce(0) { $0 + $1.deliveries.count }, sends)
    }

    /// Starts the send of `notification` in its credential's lane, in an unstructured task
    /// (cancelling the claim does not cancel it); when it ends, its lane is let go of, a probe
    /// that ended without a verdict is probed again, and the dispatcher is woken when the lane has
    /// room for a claim again.
    private func start(_ notification: ClaimedNotification, credential: String, probe: Set<String>) -> Task<Void, Never>
    {
        let count = notification.deliveries.count
        lanes.withLock { $0.started(credential, count: count) }
        let isProbe = probe.contains(credential)
        return sending.withLock { sending in
            let id = sending.next
            sending.next += 1
            let task = Task {
                await self.send(notification)
                let now = self.clock.now
                if isProbe { self.pauses.withLock { $0.probeEnded(credential, at: now) } }
                let room = self.lanes.withLock { $0.ended(credential, count: count) }
                _ = self.sending.withLock { $0.tasks.removeValue(forKey: id) }
                if room || isProbe { self.wake() }
            }
            sending.tasks[id] = task
            return task
        }
    }
}

/// Dispatcher settings that cannot work together, or a start refused; the message says what to change.
public struct DispatcherConfigurationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    /// The duration in seconds, as a `Double` (also for the gateway's benchmark).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
