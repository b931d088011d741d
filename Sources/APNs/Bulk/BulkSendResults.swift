import Synchronization

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
            template = try notification.request(path: "")
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
    ///
    /// Runs on the caller's actor (`isolation`), as `onOutcome` does when the caller wrote it there:
    /// calling it is then no hop at all, and waiting for the next outcomes is one hop per batch the
    /// transport delivers, not two per outcome (to the actor and back).
    static func drain(
        _ results: BulkSendResults, isolation: isolated (any Actor)?, into onOutcome: (BulkOutcome) async -> Void
    ) async -> BulkSendSummary {
        var summary = BulkSendSummary()
        var iterator = results.makeAsyncIterator()
        // A fresh value's first iterator never throws; a second iteration is the only failure.
        while let outcome = try? await iterator.next(isolation: isolation) {
            summary.count(outcome)
            await onOutcome(outcome)
        }
        summary.cancelled = Task.isCancelled
        return summary
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

        /// The next outcome, or nil when every device has one (or the send was cancelled); a
        /// `for try await` loop calls this one, with its own actor. When no outcome is waiting, the
        /// reader waits on that actor too: the transport's next batch resumes it there directly.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(APNsError) -> BulkOutcome? {
            if let channel, !Task.isCancelled, let finished = channel.receiveIfReady() {
                return Iterator.outcome(finished, producer: producer)
            }
            return try await Iterator.receive(from: channel, producer: producer, isolation: actor)
        }

        private static func receive(
            from channel: BulkChannel<DeviceResult>?, producer: Producer?,
            isolation actor: isolated (any Actor)? = nil
        ) async throws(APNsError) -> BulkOutcome? {
            guard let channel else { throw .bulkResultsAlreadyIterated }
            let finished = await withTaskCancellationHandler {
                await channel.receive(isolation: actor)
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
