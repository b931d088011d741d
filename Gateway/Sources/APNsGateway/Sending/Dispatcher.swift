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
        /// Batches being sent at once (each claimed while the others are on the wire).
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
        /// The deadline of each device-send.
        public var timeout: Duration = .seconds(30)
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

    private let store: any GatewayStore
    private let connector: AnyConnector
    private let configuration: Configuration
    private let logger: Logger
    /// This sender's name in leases.
    public let owner: String
    private let wakeUps: AsyncStream<Void>
    private let wakeUpContinuation: AsyncStream<Void>.Continuation
    /// Device-sends finished or queued again, by result: accepted, rejected, failed, expired,
    /// requeued.
    private let results: [String: Counter]
    /// Unfinished device-sends, read at each poll.
    private let queueDepth: Gauge
    /// 1 while sending is paused for the cause, else 0.
    private let paused: [UpstreamCause: Gauge]
    /// This process's registration in the store.
    private let identity: GatewayInstance
    /// Whether a send may start: the lease as the last heartbeats left it.
    private let lease: Mutex<SenderLease>
    /// Whether sending is paused for a cause upstream.
    private let pause = Mutex(UpstreamPause())

    /// - Parameters:
    ///   - metricsFactory: Where its metrics go; nil uses `MetricsSystem.factory`.
    public init(
        store: any GatewayStore, connector: AnyConnector, configuration: Configuration = .init(), logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        let factory = metricsFactory ?? MetricsSystem.factory
        results = Dictionary(
            uniqueKeysWithValues: ["accepted", "rejected", "failed", "expired", "requeued"].map {
                ($0, Counter(label: "apns_gateway_device_sends_total", dimensions: [("result", $0)], factory: factory))
            })
        queueDepth = Gauge(label: "apns_gateway_queue_depth", factory: factory)
        paused = Dictionary(
            uniqueKeysWithValues: UpstreamCause.allCases.map {
                (
                    $0,
                    Gauge(label: "apns_gateway_sending_paused", dimensions: [("cause", $0.rawValue)], factory: factory)
                )
            })
        for gauge in paused.values { gauge.record(0) }  // listed from the start, not after a first pause
        self.store = store
        self.connector = connector
        self.configuration = configuration
        self.logger = logger
        owner = configuration.instance
        identity = GatewayInstance(name: configuration.instance, heartbeat: configuration.heartbeat)
        lease = Mutex(
            SenderLease(lease: configuration.lease, timeout: configuration.timeout, heartbeat: configuration.heartbeat))
        (wakeUps, wakeUpContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the dispatcher to look at the queue now (a notification was accepted).
    public func wake() { wakeUpContinuation.yield() }

    /// Whether the dispatcher sends, or waits out a cause upstream (for readiness).
    public var status: SendingStatus {
        let (state, cause) = pause.withLock { ($0.state, $0.cause) }
        guard let cause else { return .sending }
        switch state {
        case .sending: return .sending
        case .paused(let until, _): return .paused(cause, probeIn: max(.zero, until - .now))
        case .probing: return .paused(cause, probeIn: .zero)
        }
    }

    /// Registers this sender (refused while a live one holds its name), takes back what dead
    /// senders held, then claims and sends until graceful shutdown (or cancellation), renewing
    /// its leases every ``Configuration/heartbeat``; work claimed when shutdown begins is finished
    /// first, and the registration is removed at the end.
    public func run() async throws {
        try configuration.check()
        try await register()
        let wakeUps = self.wakeUps
        let pollInterval = configuration.pollInterval
        let continuation = wakeUpContinuation
        try await cancelWhenGracefulShutdown {
            try await withThrowingDiscardingTaskGroup { group in
                // Turns the poll interval into wake-ups.
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: pollInterval)
                        continuation.yield()
                    }
                }
                group.addTask { await self.keepLeases() }
                group.addTask { await self.pruneHistory() }
                for await _ in wakeUps {
                    // Batches overlap: one is claimed (and its outcomes written) while another is
                    // on the wire, so the connection does not idle between them.
                    await withDiscardingTaskGroup { batches in
                        for _ in 0..<self.configuration.concurrentBatches {
                            batches.addTask { while await self.dispatchLogged() > 0 {} }
                        }
                    }
                    if let depth = try? await self.store.queueDepth() { self.queueDepth.record(depth) }
                }
            }
        }
        try? await store.unregister(identity)
    }

    /// Registers ``owner`` in the store; the start's failure when a live sender holds the name.
    ///
    /// A holder registered from this host under this process's own id is an earlier start of it
    /// (a container restarted as PID 1), dead once it has missed three heartbeats
    /// (``GatewayInstance/isEarlierStart(host:processID:incarnation:lastHeartbeat:now:)``): the
    /// start waits for that, a few seconds at most, instead of being refused.
    func register() async throws {
        var now = Date()
        var start = ContinuousClock.now
        var registration = try await store.register(identity, now: now, staleAfter: configuration.lease)
        let giveUp = start + configuration.heartbeat * 4
        while case .nameInUse(let host, let processID, _) = registration,
            identity.sharesProcessID(host: host, processID: processID), ContinuousClock.now < giveUp
        {
            try await Task.sleep(for: configuration.heartbeat / 2)
            now = Date()
            start = ContinuousClock.now
            registration = try await store.register(identity, now: now, staleAfter: configuration.lease)
        }
        switch registration {
        case .registered(let released):
            lease.withLock { $0.renewed(startedAt: start) }
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
            try? await Task.sleep(for: interval)
            let start = ContinuousClock.now
            do {
                let alive = try await store.heartbeat(
                    identity, now: Date(), leaseUntil: Date().addingTimeInterval(configuration.lease.seconds))
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
            switch lease.withLock({ $0.judge(at: .now) }) {
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
            try? await Task.sleep(for: configuration.pruneInterval)
            let cutoff = Date().addingTimeInterval(-configuration.retention.seconds)
            var deleted = 0
            do {
                while !Task.isCancelled {
                    let batch = try await store.deleteFinished(before: cutoff, limit: 500)
                    deleted += batch
                    if batch < 500 { break }
                    try? await Task.sleep(for: .milliseconds(10))  // let claims and writes in between
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

    /// Whether a send may start now: its lease outlasts it by a heartbeat (judged at each call,
    /// so a heartbeat stuck on the database stops sends as surely as a failed one; always, when
    /// the sender was not registered by ``run()``), and sending is not paused.
    private var mayStart: Bool {
        let now = ContinuousClock.now
        return lease.withLock { $0.mayStart(at: now) } && pause.withLock { $0.mayStart(at: now) }
    }

    /// ``dispatchOnce(now:)``, with a failure to claim logged (the next wake-up tries again)
    /// instead of ending the service.
    private func dispatchLogged() async -> Int {
        do {
            return try await dispatchOnce()
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

    /// Claims one batch due at `now` and sends it; returns how many device-sends it claimed.
    ///
    /// Called on its own (without ``run()``, as tests do), it claims under the lease alone: no
    /// registration and no heartbeat renews it.
    ///
    /// While sending is paused it claims nothing; when the pause is over, one device-send, the
    /// probe (``UpstreamPause``).
    @discardableResult
    public func dispatchOnce(now: Date = Date()) async throws -> Int {
        guard lease.withLock({ $0.mayStart(at: .now) }) else { return 0 }
        let decision = pause.withLock { $0.claim(at: .now) }
        if decision == .nothing { return 0 }
        let probe = decision == .probe
        let limit = probe ? 1 : configuration.claimBatch
        let claimed: [ClaimedNotification]
        do {
            claimed = try await store.claim(
                owner: owner, limit: limit, now: now, leaseUntil: now.addingTimeInterval(configuration.lease.seconds))
        } catch {
            if probe { pause.withLock { $0.probeEnded(at: .now) } }
            throw error
        }
        // Finish what was claimed even if shutdown begins meanwhile: a lease left to expire would
        // delay these sends by its length.
        // (An unstructured task: cancelling the caller does not cancel it.)
        if !claimed.isEmpty {
            await Task {
                await withDiscardingTaskGroup { group in
                    for notification in claimed {
                        group.addTask { await self.send(notification) }
                    }
                }
            }.value
        }
        // A probe that found nothing to send, or ended without a verdict: the next claim probes.
        if probe { pause.withLock { $0.probeEnded(at: .now) } }
        return claimed.reduce(0) { $0 + $1.deliveries.count }
    }

    private func send(_ claimed: ClaimedNotification) async {
        let spec: NotificationSpec
        do {
            spec = try NotificationRequest.notification(storedJSON: claimed.storedJSON)
        } catch {
            // Checked before it was stored: only a gateway of another version could get here.
            logger.error(
                "stored notification no longer valid",
                metadata: ["notification": "\(claimed.id)", "problem": "\(error)"])
            await write(
                claimed.deliveries.map {
                    finished(claimed, $0, app: "", kind: "invalid", delivery: .notSent, message: error.description)
                })
            return
        }
        let expiresAt = expiry(of: spec, acceptedAt: claimed.createdAt)
        let expired = Date() >= expiresAt
        var byToken: [String: ClaimedDelivery] = [:]
        var ids: [String: APNsID] = [:]
        var devices: [Device] = []
        var pending: [DeliveryOutcome] = []
        let atMostOnce = spec.delivery == .atMostOnce
        for delivery in claimed.deliveries {
            if atMostOnce, delivery.mayHaveBeenSent {
                // Recorded as started by a sender that left no outcome (it crashed, or lost its
                // lease): it may have reached APNs, and this notification forbids a second time.
                pending.append(
                    finished(
                        claimed, delivery, app: spec.app, kind: "interrupted", delivery: .unknown,
                        message:
                            "the sender that started it stopped before its outcome was written; at-most-once: not sent again"
                    ))
                continue
            }
            if expired {
                pending.append(self.expired(claimed, delivery, app: spec.app, at: expiresAt, after: nil))
                continue
            }
            if delivery.token.hasPrefix(NotificationRequest.channelPrefix) {
                if atMostOnce {
                    guard await markStarted(claimed, [delivery], app: spec.app) else { continue }
                }
                pending.append(await broadcast(spec, claimed, delivery, expiresAt: expiresAt))
                continue
            }
            do {
                let device = try Device(token: delivery.token)
                byToken[device.token] = delivery
                ids[device.token] =
                    spec.apnsID ?? Dispatcher.apnsID(notification: claimed.id, position: delivery.position)
                devices.append(device)
            } catch {
                pending.append(
                    finished(
                        claimed, delivery, app: spec.app, kind: "invalid", delivery: .notSent,
                        message: error.description))
            }
        }
        await write(pending)
        guard !devices.isEmpty else { return }
        // Devices go through the bulk path (a channel's notification has none).
        let sending = Sending(claimed: claimed, spec: spec, byToken: byToken, ids: ids, expiresAt: expiresAt)
        guard atMostOnce else {
            await bulk(devices, sending)
            return
        }
        // At most once: each group is recorded as started before any of it may be written.
        var groups = stride(from: 0, to: devices.count, by: configuration.startGroup).map {
            devices[$0..<min($0 + configuration.startGroup, devices.count)]
        }[...]
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            while let next = groups.first {
                // A group is recorded only when fewer than `startGroupsInFlight` are on the wire,
                // and started only once its record is in.
                if inFlight == configuration.startGroupsInFlight {
                    await group.next()
                    inFlight -= 1
                }
                guard mayStart else { break }  // this group and the rest are queued again below
                groups = groups.dropFirst()
                // When the record fails, markStarted queues this group again; the rest below.
                guard await markStarted(claimed, next.compactMap { byToken[$0.token] }, app: spec.app) else { break }
                inFlight += 1
                group.addTask { await self.bulk(Array(next), sending) }
            }
        }
        // Groups never recorded as started: provably unsent, queued again.
        let unstarted = groups.flatMap { $0 }
        if !unstarted.isEmpty {
            let (retryAt, why) = notStarted()
            await write(
                unstarted.compactMap { byToken[$0.token] }.map {
                    stopped(claimed, $0, app: spec.app, retryAt: retryAt, why: why)
                })
        }
    }

    /// When a notification expires: at its `expiration`, when it gave one (not 0), else
    /// ``Configuration/maximumAge`` after it was accepted.
    private func expiry(of spec: NotificationSpec, acceptedAt: Date) -> Date {
        if let seconds = spec.notification.expiration?.unixSeconds, seconds > 0 {
            return Date(timeIntervalSince1970: Double(seconds))
        }
        return acceptedAt.addingTimeInterval(configuration.maximumAge.seconds)
    }

    /// What ``bulk(_:_:)`` needs of the notification being sent.
    private struct Sending: Sendable {
        let claimed: ClaimedNotification
        let spec: NotificationSpec
        let byToken: [String: ClaimedDelivery]
        let ids: [String: APNsID]
        let expiresAt: Date
    }

    /// Records `deliveries` as started (an at-most-once notification's, before they may be sent);
    /// whether all of them were. When not (the database failed, or the lease was lost), none is
    /// sent, and they are queued again — they were not.
    private func markStarted(_ claimed: ClaimedNotification, _ deliveries: [ClaimedDelivery], app: String) async -> Bool
    {
        do {
            let marked = try await store.markStarted(
                notificationID: claimed.id, positions: deliveries.map(\.position), owner: owner, now: Date())
            if marked == deliveries.count { return true }
            logger.warning(
                "some device-sends of an at-most-once notification were no longer ours to start; not sending them",
                metadata: ["notification": "\(claimed.id)", "held": "\(marked)", "of": "\(deliveries.count)"])
        } catch {
            logger.error(
                "recording an at-most-once notification's sends as started failed; not sending them now",
                metadata: ["notification": "\(claimed.id)", "error": "\(DatabaseFailure(error))"])
        }
        let why = "not started: its record as started could not be written"
        await write(
            deliveries.map { stopped(claimed, $0, app: app, retryAt: Date().addingTimeInterval(1), why: why) })
        return false
    }

    /// Sends one notification to `devices` through the library's bulk path, writing outcomes as
    /// they come; devices it never started (the lease came into doubt, or sending paused) are
    /// queued again.
    private func bulk(_ devices: [Device], _ sending: Sending) async {
        let (claimed, spec, byToken, ids) = (sending.claimed, sending.spec, sending.byToken, sending.ids)
        var pending: [DeliveryOutcome] = []
        // The devices that have their outcome from the bulk send (some may be written already).
        var answered: Set<String> = []
        // The batch of outcomes being written, if any (awaited before the next, and at the end).
        var writing: Task<Void, Never>?
        // Read as sending progresses: none is started once the lease is in doubt or sending paused.
        let startable = StoppableDevices(devices: devices) { [self] in !mayStart }
        do {
            let results = try bulkSendOutcomes(
                spec.notification, via: connector, to: startable, timeout: configuration.timeout,
                retry: configuration.retry,
                apnsID: { device in ids[device.token] ?? APNsID() })
            var lastWrite = ContinuousClock.now
            for try await outcome in results {
                guard let delivery = byToken[outcome.device.token] else { continue }
                answered.insert(outcome.device.token)
                pending.append(record(outcome.result, claimed, delivery, app: spec.app, expiresAt: sending.expiresAt))
                if pending.count >= configuration.writeBatch
                    || ContinuousClock.now - lastWrite >= configuration.writeInterval
                {
                    // One batch is written while the next is collected: the bulk send follows
                    // this loop's pace, so waiting here for the database would idle the
                    // connection. Never more than one write of this send in flight.
                    await writing?.value
                    let batch = pending
                    writing = Task { await self.write(batch) }
                    pending.removeAll(keepingCapacity: true)
                    lastWrite = ContinuousClock.now
                }
            }
        } catch {
            // The connector refused the notification as a whole (its authentication cannot send
            // this push type, say): every device-send ends with that reason, nothing was sent.
            for device in devices where !answered.contains(device.token) {
                guard let delivery = byToken[device.token] else { continue }
                answered.insert(device.token)
                pending.append(
                    finished(
                        claimed, delivery, app: spec.app, kind: "invalid", delivery: .notSent, message: "\(error)"))
            }
        }
        // Devices the bulk send never read were never started (the lease came into doubt, or
        // sending paused): provably unsent, queued again.
        let (retryAt, why) = notStarted()
        for device in devices[startable.handedOut...] where !answered.contains(device.token) {
            guard let delivery = byToken[device.token] else { continue }
            pending.append(stopped(claimed, delivery, app: spec.app, retryAt: retryAt, why: why))
        }
        await writing?.value
        await write(pending)
    }

    /// When device-sends this sender did not start are due again, and why they were not: the
    /// pause's end while sending is paused, else (the lease in doubt) a second from now.
    private func notStarted() -> (Date, String) {
        let now = ContinuousClock.now
        let (resumesAt, cause) = pause.withLock { ($0.resumesAt(now), $0.cause) }
        guard let cause else {
            return (
                Date().addingTimeInterval(1), "not started: this instance stopped sending while its lease was in doubt"
            )
        }
        return (
            Date().addingTimeInterval((resumesAt - now).seconds), "not started: sending is paused (\(cause.rawValue))"
        )
    }

    /// A device-send this instance did not start: queued again, not sent, no attempt spent.
    private func stopped(
        _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, app: String, retryAt: Date, why: String
    ) -> DeliveryOutcome {
        DeliveryOutcome(
            notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app,
            errorKind: "stopped", delivery: Delivery.notSent.rawValue, message: why, retryAt: retryAt,
            countsAsAttempt: false)
    }

    /// Sends a Live Activity update or end to its broadcast channel (one request for every
    /// subscribed device).
    private func broadcast(
        _ spec: NotificationSpec, _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, expiresAt: Date
    ) async -> DeliveryOutcome {
        let id = String(delivery.token.dropFirst(NotificationRequest.channelPrefix.count))
        guard let notification = spec.notification as? any BroadcastDeliverable,
            let channel = try? BroadcastChannel(id: id, bundleID: spec.app)
        else {
            return finished(
                claimed, delivery, app: spec.app, kind: "invalid", delivery: .notSent,
                message: "not a channel notification")
        }
        guard mayStart else {
            let (retryAt, why) = notStarted()
            return stopped(claimed, delivery, app: spec.app, retryAt: retryAt, why: why)
        }
        let result: Result<APNsResponse, APNsError>
        do throws(APNsError) {
            result = .success(
                try await APNs.send(
                    notification, via: connector, to: channel, timeout: configuration.timeout,
                    retry: configuration.retry))
        } catch {
            result = .failure(error)
        }
        var outcome = record(result, claimed, delivery, app: spec.app, expiresAt: expiresAt)
        if case .success(let response) = result, outcome.apnsID == nil { outcome.apnsID = response.requestID }
        return outcome
    }

    public static func apnsID(notification: String, position: Int) -> APNsID {
        var bytes = Array(SHA256.hash(data: Array("\(notification)/\(position)".utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8: custom
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // variant: RFC 9562
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        return APNsID(uuid)
    }

    /// The outcome of one device-send's send: done, queued again, or finished as failed or
    /// expired. A cause upstream pauses sending (``UpstreamPause``) and queues the device-send for
    /// the pause's end without spending an attempt; any other answer from APNs ends a pause.
    private func record(
        _ result: Result<APNsResponse, APNsError>, _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery,
        app: String, expiresAt: Date
    ) -> DeliveryOutcome {
        if let cause = UpstreamCause.of(result) {
            let retryAt = paused(by: cause, result)
            let (kind, message) = Self.failureText(result)
            var outcome = DeliveryOutcome(
                notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app,
                errorKind: kind, delivery: Delivery.notSent.rawValue, message: message, retryAt: retryAt,
                countsAsAttempt: false)
            if retryAt >= expiresAt { outcome = expired(claimed, delivery, app: app, at: expiresAt, after: message) }
            return outcome
        }
        var record = DeliveryOutcome(
            notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app)
        switch result {
        case .success(let response):
            resumed()
            record.status = response.status
            record.apnsID = response.apnsID?.description
        case .failure(.rejected(let rejection)):
            resumed()
            if rejection.reason == .tooManyRequests, let retryAt = retry(delivery, notBefore: rejection.retryAfter),
                retryAt < expiresAt
            {
                // Too many pushes to this device: its own failure, an attempt spent.
                record.errorKind = "rejected"
                record.delivery = Delivery.notSent.rawValue
                record.message = rejection.description
                record.retryAt = retryAt
                return record
            }
            record.status = rejection.status
            record.reason = rejection.reason?.rawValue
            record.apnsID = rejection.apnsID?.description
            record.invalidSince = rejection.timestamp
            record.message = rejection.description
        case .failure(.transport(let failure))
        where failure.delivery == .notSent && (failure.kind == .cancelled || failure.kind == .shutDown):
            // This sender stopping, not the device-send failing: queued again, no attempt spent.
            record.errorKind = failure.kind.rawValue
            record.delivery = failure.delivery.rawValue
            record.message = failure.description
            record.retryAt = Date().addingTimeInterval(1)
            record.countsAsAttempt = false
        case .failure(let error):
            let (kind, message) = Self.failureText(result)
            return finished(
                claimed, delivery, app: app, kind: kind, delivery: error.mayHaveBeenDelivered ? .unknown : .notSent,
                message: message)
        }
        return record
    }

    /// A failure's kind and message, as the outcome records them.
    private static func failureText(_ result: Result<APNsResponse, APNsError>) -> (kind: String, message: String) {
        switch result {
        case .success: return ("", "")
        case .failure(.transport(let failure)): return (failure.kind.rawValue, failure.description)
        case .failure(.rejected(let rejection)): return ("rejected", rejection.description)
        case .failure(.validation(let error)): return ("invalid", error.description)
        case .failure(.credential(let error)): return ("credential", error.description)
        case .failure(let error): return ("other", error.description)
        }
    }

    /// When a device-send that failed on its own is due again (a back-off that doubles with each
    /// attempt, capped, with jitter; no sooner than `notBefore`), or nil when its attempts are
    /// spent.
    private func retry(_ delivery: ClaimedDelivery, notBefore: Duration?) -> Date? {
        guard delivery.attempts + 1 < configuration.maximumAttempts else { return nil }
        let backOff = min(60, pow(2, Double(delivery.attempts))) * Double.random(in: 0.5...1)
        return Date().addingTimeInterval(max(backOff, notBefore?.seconds ?? 0))
    }

    /// A final failure without an answer.
    private func finished(
        _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, app: String, kind: String, delivery sent: Delivery,
        message: String
    ) -> DeliveryOutcome {
        DeliveryOutcome(
            notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app,
            errorKind: kind, delivery: sent.rawValue, message: message)
    }

    /// A device-send whose notification expired before it could be sent: finished, never sent.
    private func expired(
        _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, app: String, at expiry: Date, after last: String?
    ) -> DeliveryOutcome {
        var message =
            "not sent: the notification expired (at \(Int(expiry.timeIntervalSince1970)) UNIX seconds) before it could be sent"
        if let last { message += "; the last try: \(last)" }
        var outcome = finished(claimed, delivery, app: app, kind: "expired", delivery: .notSent, message: message)
        outcome.countsAsAttempt = false
        return outcome
    }

    /// A send failed for `cause`: sending pauses (or stays paused); returns when the device-send
    /// is due again.
    private func paused(by cause: UpstreamCause, _ result: Result<APNsResponse, APNsError>) -> Date {
        var retryAfter: Duration?
        if case .failure(.rejected(let rejection)) = result { retryAfter = rejection.retryAfter }
        let now = ContinuousClock.now
        let (change, resumesAt) = pause.withLock {
            ($0.failed(cause, retryAfter: retryAfter, at: now, jitter: Double.random(in: 0.8...1.2)), $0.resumesAt(now))
        }
        let probeIn = resumesAt - now
        switch change {
        case .paused(let cause, _)?:
            for (each, gauge) in paused { gauge.record(each == cause ? 1 : 0) }
            let (kind, message) = Self.failureText(result)
            logger.warning(
                "sending paused: \(Self.explanation(of: cause)); device-sends wait without spending attempts",
                metadata: [
                    "cause": "\(cause.rawValue)", "probe_in_ms": "\(Int(probeIn.seconds * 1000))",
                    "error.type": "\(kind)", "error.message": "\(message)",
                ])
        case .stillPaused(let cause, _)?:
            logger.info(
                "still paused: the probe met the same cause",
                metadata: ["cause": "\(cause.rawValue)", "probe_in_ms": "\(Int(probeIn.seconds * 1000))"])
        case .resumed?, nil:
            break
        }
        return Date().addingTimeInterval(probeIn.seconds)
    }

    /// APNs answered a send with something other than trouble upstream: a pause ends.
    private func resumed() {
        guard case .resumed(let cause)? = pause.withLock({ $0.answered() }) else { return }
        for gauge in paused.values { gauge.record(0) }
        logger.notice("sending resumed: APNs answered", metadata: ["cause": "\(cause.rawValue)"])
    }

    /// What a cause means, for the log.
    private static func explanation(of cause: UpstreamCause) -> String {
        switch cause {
        case .unreachable: "APNs cannot be reached"
        case .serverError: "APNs answers with server errors"
        case .credentials: "APNs refuses the credential"
        }
    }

    /// Writes outcomes back, then counts them (what was written, so a reader of the counter finds
    /// them in the store).
    private func write(_ outcomes: [DeliveryOutcome]) async {
        guard !outcomes.isEmpty else { return }
        // The outcome of a send is not lost to a passing database error: try again while the
        // lease keeps the device-sends ours. After that they are claimed and sent again.
        var delay: Duration = .milliseconds(50)
        let giveUp = ContinuousClock.now + configuration.lease
        while true {
            do {
                _ = try await store.complete(outcomes, owner: owner, now: Date())
                for outcome in outcomes {
                    let result =
                        outcome.retryAt != nil
                        ? "requeued"
                        : outcome.status == 200
                            ? "accepted"
                            : outcome.status != nil ? "rejected" : outcome.errorKind == "expired" ? "expired" : "failed"
                    results[result]?.increment()
                }
                return
            } catch {
                guard ContinuousClock.now + delay < giveUp else {
                    logger.error(
                        "writing outcomes failed until the lease ran out: these device-sends will be sent again",
                        metadata: ["error": "\(DatabaseFailure(error))", "outcomes": "\(outcomes.count)"])
                    return
                }
                logger.warning(
                    "writing outcomes failed; retrying",
                    metadata: ["error": "\(DatabaseFailure(error))", "outcomes": "\(outcomes.count)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}

/// The devices of a bulk send, read as it progresses, ending early once `stop` says so; how
/// many were read (``handedOut``) tells the started from the never started.
///
/// Thread safety: `Sendable`; the count is behind a `Mutex` (the bulk send's producer reads,
/// the dispatcher's task counts).
final class StoppableDevices: Sequence, Sendable {
    let devices: [Device]
    let stop: @Sendable () -> Bool
    private let read = Mutex(0)

    init(devices: [Device], stop: @escaping @Sendable () -> Bool) {
        self.devices = devices
        self.stop = stop
    }

    /// How many devices the bulk send has read (and so started).
    var handedOut: Int { read.withLock { $0 } }

    struct Iterator: IteratorProtocol {
        let owner: StoppableDevices
        mutating func next() -> Device? {
            guard !owner.stop() else { return nil }
            return owner.read.withLock { index in
                guard index < owner.devices.count else { return nil }
                defer { index += 1 }
                return owner.devices[index]
            }
        }
    }

    func makeIterator() -> Iterator { Iterator(owner: self) }
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
