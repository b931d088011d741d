import Synchronization
import Tracing

/// The result for one device of a bulk send: accepted (with its apns-id) or its ``APNsError``
/// (a rejection, or a transport failure that says whether the push may have been delivered).
public struct BulkOutcome: Sendable {
    /// The device this outcome is for.
    public let device: Device
    /// APNs' acceptance, or the ``APNsError`` for this device.
    public let result: Result<APNsResponse, APNsError>
    /// How long this device's send took, from when its request was started (after waiting for a
    /// free stream under `maximumInFlight`) until its outcome arrived, retries included.
    public let duration: Duration

    init(device: Device, result: Result<APNsResponse, APNsError>, duration: Duration = .zero) {
        self.device = device
        self.result = result
        self.duration = duration
    }

    /// The rejection, when APNs refused this device (for example to drop `.unregistered` tokens).
    public var rejection: APNsRejection? {
        if case .failure(.rejected(let rejection)) = result { return rejection }
        return nil
    }

    /// The transport failure, when no answer came back for this device.
    public var transportFailure: TransportError? {
        if case .failure(.transport(let failure)) = result { return failure }
        return nil
    }

    /// Whether APNs accepted the push for this device.
    public var isAccepted: Bool {
        if case .success = result { return true }
        return false
    }
}

/// What a bulk send did, counted by outcome.
///
/// ```swift
/// let summary = try await send(notification, via: connector, to: devices)
/// print(summary)   // "9998 accepted, 2 rejected, 0 failed (0 may have been delivered)"
/// ```
public struct BulkSendSummary: Hashable, Sendable, CustomStringConvertible {
    /// Devices APNs accepted the push for.
    public var accepted = 0
    /// Devices APNs refused (see each ``BulkOutcome/rejection``).
    public var rejected = 0
    /// Devices for which no answer came back (see each ``BulkOutcome/transportFailure``).
    public var failed = 0
    /// Of ``failed``, those whose push may have been delivered (``Delivery/unknown``).
    public var deliveryUnknown = 0
    /// Whether the send was cancelled before every device had an outcome: the devices without
    /// one were not sent to, or their push was cancelled in flight.
    public var cancelled = false
    /// The devices APNs said to stop using (410 `Unregistered` with its timestamp) and those it
    /// refused as not tokens for this topic or environment: persist them (see ``TokensToForget``).
    public var tokensToForget = TokensToForget()

    /// An empty summary.
    public init() {}

    /// Every outcome counted.
    public var total: Int { accepted + rejected + failed }

    /// Counts `outcome`; with `collectingTokens`, also adds its device to ``tokensToForget`` when
    /// APNs said to stop using it.
    mutating func count(_ outcome: BulkOutcome, collectingTokens: Bool = true) {
        switch outcome.result {
        case .success: accepted += 1
        case .failure(.rejected(let rejection)):
            rejected += 1
            if collectingTokens { tokensToForget.collect(rejection, for: outcome.device) }
        case .failure(let error):
            failed += 1
            if error.mayHaveBeenDelivered { deliveryUnknown += 1 }
        }
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        "\(accepted) accepted, \(rejected) rejected, \(failed) failed (\(deliveryUnknown) may have been delivered)"
            + (cancelled ? ", cancelled" : "")
    }
}

/// Sends one notification to many devices through a token connector, multiplexed on the
/// connector's connection, and returns when every device has its outcome.
///
/// The payload is serialised once and each device gets its own request (no apns-id: APNs assigns
/// each push one and returns it in its outcome). `onOutcome` sees each device's ``BulkOutcome``
/// as its answer arrives, one at a time; while it runs, sending pauses once `maximumInFlight`
/// requests are waiting, so memory stays flat for any number of devices. Cancelling the calling
/// task stops the send: requests in flight are cancelled and devices not yet started are not sent
/// to (the summary says ``BulkSendSummary/cancelled``).
///
/// ```swift
/// let summary = try await send(notification, via: connector, to: devices) { outcome in
///     if outcome.rejection?.reason == .unregistered { await forget(outcome.device) }
/// }
/// print(summary)
/// ```
/// To read outcomes as an `AsyncSequence` instead, use `bulkSendOutcomes(_:via:to:)`.
/// - Parameters:
///   - notification: What to send to every device; serialised once, checked before anything is sent.
///   - connector: A token connector (or a recording connector standing in for one).
///   - devices: The device tokens, in any `Sequence`; read lazily, as sending progresses.
///   - maximumInFlight: Requests started and not yet handed to `onOutcome`, at most; by default
///     the connector's ``Connector/concurrencyLimit`` plus a small reserve queued in the connector
///     (two refill batches: 12 for 100 streams, 64 from 512 on), so a stream that frees takes the
///     next request at once. Their deadlines run while they wait, so when a connection stalls they
///     may time out with the requests written to it (as not sent: they were not). Passing the
///     concurrency limit itself keeps nothing queued.
///   - timeout: Each device's deadline, counted from when its request is started, retries
///     included; nil uses the connector's `TransportConfiguration.requestTimeout`.
///   - retry: When a device's send tries again on its own (``RetryPolicy``); none by default.
///   - onOutcome: Called once per device, in the order answers arrive.
/// - Returns: The outcomes, counted.
/// - Throws: ``APNsError/validation(_:)`` before anything is sent if the notification or an
///   option is invalid, including ``APNsValidationError/apnsIDInBulkSend``. Per-device failures
///   are outcomes, never thrown.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil,
    retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary
where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    await BulkSendResults.drain(
        try BulkSendResults(
            notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry),
        into: onOutcome)
}

/// Sends one notification to many devices through a certificate connector; see the token variant.
///
/// ```swift
/// let summary = try await send(notification, via: certificateConnector, to: devices)
/// ```
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil,
    retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary
where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    await BulkSendResults.drain(
        try BulkSendResults(
            notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry),
        into: onOutcome)
}

/// Sends one notification to many devices through a connector chosen at run time; the push
/// type's rules for its authentication are checked before anything is sent. See the token variant.
@discardableResult
public func send<Notification: PushNotification, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: AnyConnector, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary where Devices.Element == Device {
    await BulkSendResults.drain(
        try BulkSendResults(
            notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry),
        into: onOutcome)
}

/// The outcomes of sending one notification to many devices through a token connector, as an
/// `AsyncSequence` to iterate once: **nothing is sent until iteration starts**, and sending then
/// follows the reader's pace.
///
/// Use it when outcomes feed another asynchronous pipeline or the reader wants to stop early
/// (leaving the loop cancels the rest); otherwise the bulk `send(_:via:to:)`, which returns a
/// ``BulkSendSummary``, is simpler and cannot be left unread.
///
/// ```swift
/// for try await outcome in try bulkSendOutcomes(notification, via: connector, to: devices) {
///     if outcome.rejection?.reason == .unregistered { await forget(outcome.device) }
/// }
/// ```
///
/// `apnsID` gives each device's request its own apns-id (a notification sent in bulk may not set
/// one): derive it from your own records, and a send repeated after a crash carries the same id,
/// so it can be recognised in APNs' answers and your logs.
///
/// ```swift
/// let results = try bulkSendOutcomes(notification, via: connector, to: devices, apnsID: { device in
///     ids[device] ?? APNsID()   // e.g. stored beside the device row when the send was queued
/// })
/// ```
/// - Throws: ``APNsError/validation(_:)`` at once if the notification or an option is invalid
///   (nothing is sent).
public func bulkSendOutcomes<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
        timeout: timeout,
        retry: retry, apnsID: apnsID)
}

/// The outcomes of sending one notification to many devices through a certificate connector; see
/// the token variant.
public func bulkSendOutcomes<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults
where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
        timeout: timeout,
        retry: retry, apnsID: apnsID)
}

/// The outcomes of sending one notification to many devices through a connector chosen at run
/// time; see the token variant.
public func bulkSendOutcomes<Notification: PushNotification, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: AnyConnector, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults where Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
        timeout: timeout,
        retry: retry, apnsID: apnsID)
}

/// The outcomes of sending an already-built request to many devices (each gets the request with its
/// own path), for the `apns` tool, which builds requests from command-line flags and files.
///
/// SPI: no compile-time rules; ``APNsRequest/checkRules(for:)`` applies as on every send.
@_spi(RawRequests)
public func bulkSendOutcomes<Devices: Sequence & Sendable>(
    request template: APNsRequest, via connector: some Connector, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none
) throws(APNsError) -> BulkSendResults where Devices.Element == Device {
    try BulkSendResults(
        template: template, connector: connector, devices: devices, maximumInFlight: maximumInFlight, timeout: timeout,
        retry: retry)
}

/// The outcomes of a bulk send, one per device, in the order responses arrive.
///
/// Iterate it once: sending starts when iteration starts and follows the consumer's pace (at most
/// `maximumInFlight` requests are started and not yet read). A second iteration — of this value or
/// a copy — sends nothing and throws ``APNsError/bulkResultsAlreadyIterated``. Per-device failures
/// are outcomes, never thrown.
///
/// Thread safety: `Sendable`; iterate it from one task.
public struct BulkSendResults: AsyncSequence, Sendable {
    /// One outcome per device.
    public typealias Element = BulkOutcome
    /// Only ``APNsError/bulkResultsAlreadyIterated``; per-device failures are outcomes.
    public typealias Failure = APNsError

    /// A device, APNs' answer for it (read once, as it arrived) or the failure, how long it took
    /// from when its request was started, and how many attempts it took.
    /// (A struct, not a tuple: a tuple in a generic channel goes through the runtime's generic
    /// tuple witnesses for every copy.)
    struct DeviceResult: Sendable {
        var device: Device
        var result: Result<APNsResponse, APNsError>
        var duration: Duration
        var attempts: Int

        init(_ device: Device, _ result: Result<APNsResponse, APNsError>, _ duration: Duration, _ attempts: Int) {
            self.device = device
            self.result = result
            self.duration = duration
            self.attempts = attempts
        }
    }

    private let start: @Sendable (BulkChannel<DeviceResult>) -> Task<Void, Never>
    private let limit: Int
    /// The request every device gets (with its own path), for spans, logs and metrics.
    private let summary: RequestSummary
    private let observability: Observability
    /// Set by the first iteration, shared by every copy.
    private let iterated = IterationFlag()

    init<Notification: PushNotification, Via: Connector, Devices: Sequence & Sendable>(
        notification: Notification, connector: Via, devices: Devices, maximumInFlight: Int?, timeout: Duration?,
        retry: RetryPolicy, apnsID: (@Sendable (Device) -> APNsID)? = nil
    ) throws(APNsError) where Devices.Element == Device {
        // Validate and serialise once; each device only changes the path.
        let template: APNsRequest
        do throws(APNsValidationError) {
            guard notification.apnsID == nil else { throw .apnsIDInBulkSend }
            template = try notification.request(to: Device(validatingTokenBytes: [0]))
        } catch {
            engine(of: connector)?.observability.recordRefusal(
                pushType: Notification.pushType.rawValue, error: .validation(error))
            throw .validation(error)
        }
        try self.init(
            template: template, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout,
            retry: retry, apnsID: apnsID)
    }

    /// A bulk send of a request already built (its path is replaced per device, and its apns-id
    /// set to `apnsID(device)` when given).
    init<Via: Connector, Devices: Sequence & Sendable>(
        template: APNsRequest, connector: Via, devices: Devices, maximumInFlight: Int?, timeout: Duration?,
        retry: RetryPolicy,
        apnsID: (@Sendable (Device) -> APNsID)? = nil
    ) throws(APNsError) where Devices.Element == Device {
        let engine = APNs.engine(of: connector)
        do throws(APNsError) {
            try retry.validate()
            guard !template.headers.contains(where: { $0.name == APNsRequest.Header.Name.apnsID.rawValue }) else {
                throw .validation(.apnsIDInBulkSend)
            }
            try checkBeforeSending(template, via: connector, engine: engine)
            try TransportConfiguration.validate(sendTimeout: timeout)
            if let maximumInFlight, maximumInFlight < 1 {
                throw .validation(
                    .invalidTransportSetting(name: "maximumInFlight", value: "\(maximumInFlight); use at least 1"))
            }
        } catch {
            // A bulk send refused as a whole counts once, whatever the number of devices.
            engine?.observability.recordRefusal(pushType: RequestSummary(template).pushType, error: error)
            throw error
        }
        limit = maximumInFlight ?? BulkChannel<DeviceResult>.defaultLimit(concurrency: connector.concurrencyLimit)
        summary = RequestSummary(template)
        observability = engine?.observability ?? .spansOnly
        start = { channel in
            guard let engine else {
                return Task {
                    await BulkSendResults.produce(
                        template, devices: devices, apnsID: apnsID, into: channel, via: connector, timeout: timeout,
                        retry: retry)
                    channel.finish()
                }
            }
            // A reader on the connector's own thread (its `taskExecutor`) gets its producer there
            // too, so the whole bulk send runs on that one thread; an unstructured task would
            // not inherit the preference.
            let executor = engine.transport.taskExecutor
            let here = withUnsafeCurrentTask { $0?.unownedTaskExecutor }
            return Task(executorPreference: here == executor.asUnownedTaskExecutor() ? executor : nil) {
                await BulkSendResults.produce(
                    template, devices: devices, apnsID: apnsID, into: channel, via: engine, timeout: timeout,
                    retry: retry)
                channel.finish()
            }
        }
    }

    /// Reads every outcome of `results` into `onOutcome` and counts them: the eager bulk send.
    static func drain(_ results: BulkSendResults, into onOutcome: (BulkOutcome) async -> Void) async -> BulkSendSummary
    {
        var summary = BulkSendSummary()
        var iterator = results.makeAsyncIterator()
        // A fresh value's first iterator never throws; a second iteration is the only failure.
        while let outcome = try? await iterator.next() {
            summary.count(outcome)
            await onOutcome(outcome)
        }
        summary.cancelled = Task.isCancelled
        return summary
    }

    /// The most devices started with one call to the connector.
    static let batchSize = 64

    /// swift-apns' own connectors: each batch of devices is handed to the transport at once, and
    /// results come back on its thread straight into the channel — no task per device.
    private static func produce<Devices: Sequence>(
        _ template: APNsRequest, devices: Devices, apnsID: (@Sendable (Device) -> APNsID)?,
        into channel: BulkChannel<DeviceResult>,
        via engine: ConnectorEngine, timeout: Duration?, retry: RetryPolicy
    ) async where Devices.Element == Device {
        let owner = BulkOwner()
        let observability = engine.observability
        channel.onClose { engine.cancelAll(ownedBy: owner) }
        let timeout = timeout ?? engine.defaultTimeout
        /// Hands a device's result to the reader, or, when the policy says so and the deadline leaves
        /// room, sends it again after the back-off (on a task of its own: retries are the rare path).
        @Sendable func completion(
            attempt: Int, deadline: ContinuousClock.Instant, started: ContinuousClock.Instant
        ) -> @Sendable (Device?, Result<APNsResponse, APNsError>) -> Void {
            { device, result in
                guard let device else { return }
                if attempt < retry.maximumAttempts, !owner.isCancelled, case .failure(let failure) = result,
                    let delay = retry.delay(after: failure, attempt: attempt), ContinuousClock.now + delay < deadline
                {
                    Task {
                        try? await Task.sleep(for: delay)
                        guard !owner.isCancelled else {
                            if observability.isEnabled { observability.sendsInFlight.decrement() }
                            return channel.deliver(DeviceResult(device, result, ContinuousClock.now - started, attempt))
                        }
                        engine.submit(
                            checked: template, to: [device], apnsID: apnsID, deadline: deadline, owner: owner,
                            completion: completion(attempt: attempt + 1, deadline: deadline, started: started))
                    }
                } else {
                    if observability.isEnabled { observability.sendsInFlight.decrement() }
                    channel.deliver(DeviceResult(device, result, ContinuousClock.now - started, attempt))
                }
            }
        }
        var iterator = devices.makeIterator()
        var batch: [Device] = []
        batch.reserveCapacity(batchSize)
        while !Task.isCancelled {
            let permits = await channel.take(upTo: batchSize)
            guard permits > 0 else { return }
            batch.removeAll(keepingCapacity: true)
            while batch.count < permits, let device = iterator.next() { batch.append(device) }
            channel.giveBack(permits - batch.count)
            guard !batch.isEmpty, !owner.isCancelled else { return }
            let started = ContinuousClock.now
            let deadline = started + timeout
            if observability.isEnabled { observability.sendsInFlight.increment(by: Double(batch.count)) }
            engine.submit(
                checked: template, to: batch, apnsID: apnsID, deadline: deadline, owner: owner,
                completion: completion(attempt: 1, deadline: deadline, started: started))
            if batch.count < permits { return }
        }
    }

    /// Any other connector (a recording connector, your own): one child task per device.
    private static func produce<Devices: Sequence, Via: Connector>(
        _ template: APNsRequest, devices: Devices, apnsID: (@Sendable (Device) -> APNsID)?,
        into channel: BulkChannel<DeviceResult>,
        via connector: Via, timeout: Duration?, retry: RetryPolicy
    ) async where Devices.Element == Device {
        var iterator = devices.makeIterator()
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let permits = await channel.take(upTo: batchSize)
                guard permits > 0 else { return group.cancelAll() }
                var started = 0
                while started < permits, let device = iterator.next() {
                    var request = template
                    request.path = device.path
                    if let apnsID { request.setAPNsID(apnsID(device)) }
                    let deadline = APNs.deadline(afterValid: timeout, engine: nil, retry: retry)  // checked in init
                    group.addTask {
                        let started = ContinuousClock.now
                        let (result, attempts) = await attempt(
                            request, via: connector, engine: nil, deadline: deadline, retry: retry)
                        channel.deliver(DeviceResult(device, result, ContinuousClock.now - started, attempts))
                    }
                    started += 1
                }
                channel.giveBack(permits - started)
                if started < permits { return }
            }
        }
    }

    /// Starts the bulk send, the first time; any later iterator throws
    /// ``APNsError/bulkResultsAlreadyIterated`` from its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        guard iterated.claim() else { return Iterator(channel: nil, task: nil, observation: nil) }
        let channel = BulkChannel<DeviceResult>(limit: limit)
        // The span starts in the iterating task, so it has that task's tracer and parent.
        let observation = BulkObservation(summary: summary, observability: observability)
        return Iterator(channel: channel, task: start(channel), observation: observation)
    }

    /// Reads outcomes; when the iterator is released, the bulk send is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        /// One outcome per device.
        public typealias Element = BulkOutcome
        /// Only ``APNsError/bulkResultsAlreadyIterated``.
        public typealias Failure = APNsError

        let channel: BulkChannel<DeviceResult>?
        let producer: Producer?

        init(channel: BulkChannel<DeviceResult>?, task: Task<Void, Never>?, observation: BulkObservation?) {
            self.channel = channel
            if let channel, let task, let observation {
                producer = Producer(task: task, channel: channel, observation: observation)
            } else {
                producer = nil
            }
        }

        /// The next outcome, or nil when every device has one (or the send was cancelled).
        public mutating func next() async throws(APNsError) -> BulkOutcome? {
            // An outcome already there is read without suspending or a cancellation handler (most
            // are: the transport delivers them in batches). A cancelled reader takes the slow path,
            // which cancels the send.
            if let channel, !Task.isCancelled, let finished = channel.receiveIfReady() {
                return Iterator.outcome(finished, producer: producer)
            }
            return try await Iterator.receive(from: channel, producer: producer)
        }

        /// The next outcome, or nil when every device has one (or the send was cancelled).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(APNsError) -> BulkOutcome? {
            if let channel, !Task.isCancelled, let finished = channel.receiveIfReady() {
                return Iterator.outcome(finished, producer: producer)
            }
            return try await Iterator.receive(from: channel, producer: producer)
        }

        private static func receive(
            from channel: BulkChannel<DeviceResult>?, producer: Producer?
        ) async throws(APNsError) -> BulkOutcome? {
            guard let channel else { throw .bulkResultsAlreadyIterated }
            let finished = await withTaskCancellationHandler {
                await channel.receive()
            } onCancel: { [producer] in
                producer?.cancel()
            }
            guard let finished else {
                producer?.observation.finish(cancelled: Task.isCancelled)
                return nil
            }
            return outcome(finished, producer: producer)
        }

        /// What the reader sees of one device's result, recorded for the span and metrics.
        private static func outcome(_ finished: DeviceResult, producer: Producer?) -> BulkOutcome {
            let outcome = BulkOutcome(device: finished.device, result: finished.result, duration: finished.duration)
            producer?.observation.record(outcome, duration: finished.duration, attempts: finished.attempts)
            return outcome
        }
    }

    /// Whether a bulk send's results were iterated; shared by every copy of the value.
    final class IterationFlag: Sendable {
        private let claimed = Atomic<Bool>(false)
        /// True for the first caller only.
        func claim() -> Bool {
            claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        }
    }

    /// Cancels the sending task when the last iterator copy goes away.
    final class Producer: Sendable {
        let task: Task<Void, Never>
        let channel: BulkChannel<DeviceResult>
        let observation: BulkObservation
        init(task: Task<Void, Never>, channel: BulkChannel<DeviceResult>, observation: BulkObservation) {
            self.task = task
            self.channel = channel
            self.observation = observation
        }
        func cancel() {
            task.cancel()
            channel.close()
        }
        deinit {
            cancel()
            observation.finish(cancelled: true)  // no-op when the outcomes were all read
        }
    }
}

extension Connector {
    /// 100, for connectors that do not say.
    public var concurrencyLimit: Int { 100 }
}

/// The span, metrics and log lines of one bulk send: one `apns.bulk_send` span for the whole send
/// (started when iteration starts, ended when the last outcome is read or the reader goes away),
/// and each device's outcome counted and timed like a single send.
///
/// Thread safety: `Sendable`; the counts are behind a lock (the reader records, and the last
/// iterator copy's release may finish from another thread).
final class BulkObservation: Sendable {
    private let summary: RequestSummary
    private let observability: Observability
    private let span: (any Span)?
    private let metrics: Observability.PushTypeMetrics?
    private let state = Locked<(counts: BulkSendSummary, retries: Int, finished: Bool)>((BulkSendSummary(), 0, false))

    init(summary: RequestSummary, observability: Observability) {
        self.summary = summary
        self.observability = observability
        span = observability.startSpan("apns.bulk_send", summary: summary)
        metrics = observability.isEnabled ? observability.metrics(forPushType: summary.pushType) : nil
    }

    /// One device's outcome, as the reader receives it.
    func record(_ outcome: BulkOutcome, duration: Duration, attempts: Int) {
        state.withLock { state in
            state.counts.count(outcome, collectingTokens: false)
            state.retries += attempts - 1
        }
        guard observability.isEnabled else { return }
        observability.recordSend(
            pushType: summary.pushType, result: outcome.result, duration: duration, cached: metrics)
        observability.retried(.policy, times: attempts - 1)
        observability.logSend(
            summary, result: outcome.result, duration: duration, attempts: attempts, device: outcome.device.token)
    }

    /// Ends the span with the counts, once.
    func finish(cancelled: Bool) {
        let ended = state.withLock { state -> (BulkSendSummary, Int)? in
            guard !state.finished else { return nil }
            state.finished = true
            state.counts.cancelled = cancelled
            return (state.counts, state.retries)
        }
        guard let (counts, retries) = ended else { return }
        if let span, span.isRecording {
            span.attributes["apns.bulk.accepted"] = counts.accepted
            span.attributes["apns.bulk.rejected"] = counts.rejected
            span.attributes["apns.bulk.failed"] = counts.failed
            span.attributes["apns.bulk.delivery_unknown"] = counts.deliveryUnknown
            span.attributes["apns.bulk.cancelled"] = counts.cancelled
            span.attributes["apns.retries"] = retries
            if counts.failed > 0 || counts.rejected > 0 {
                span.attributes["error.type"] = counts.failed > 0 ? "partial_failure" : "partial_rejection"
            }
        }
        span?.end()
        if observability.isEnabled {
            var metadata = summary.metadata
            metadata["apns.bulk.accepted"] = "\(counts.accepted)"
            metadata["apns.bulk.rejected"] = "\(counts.rejected)"
            metadata["apns.bulk.failed"] = "\(counts.failed)"
            metadata["apns.bulk.delivery_unknown"] = "\(counts.deliveryUnknown)"
            metadata["apns.bulk.cancelled"] = "\(counts.cancelled)"
            observability.logger.debug("APNs bulk send finished", metadata: metadata)
        }
    }
}

extension APNsRequest {
    /// Sets the apns-id header where a notification's own request has it (before
    /// apns-collapse-id), replacing any.
    mutating func setAPNsID(_ id: APNsID) {
        headers.removeAll { $0.name == Header.Name.apnsID.rawValue }
        let header = Header(.apnsID, value: id.description)
        if let collapse = headers.firstIndex(where: { $0.name == Header.Name.apnsCollapseID.rawValue }) {
            headers.insert(header, at: collapse)
        } else {
            headers.append(header)
        }
    }
}
