import Synchronization

/// The result for one device of a bulk send: accepted (with its apns-id) or its ``APNsError``
/// (a rejection, or a transport failure that says whether the push may have been delivered).
public struct BulkOutcome: Sendable {
    public let device: Device
    public let result: Result<APNsResponse, APNsError>

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

    public var isAccepted: Bool {
        if case .success = result { return true }
        return false
    }
}

/// Sends one notification to many devices through a token connector, multiplexed on the
/// connector's connection, and yields one ``BulkOutcome`` per device as responses arrive.
///
/// The payload is serialised once; requests in flight plus outcomes not yet read never exceed
/// `maximumInFlight` (by default what the connector's connections carry at once), so the sequence
/// has back-pressure: when the consumer stops reading, sending pauses, and memory stays flat for
/// any number of devices. swift-apns' connectors start each batch of devices without a task per
/// device; other connectors get a child task per device.
/// Cancelling the iterating task, or dropping the iterator, stops the bulk send: requests in flight
/// are cancelled, devices not yet started are not sent to, and the sequence ends.
///
/// ```swift
/// for try await outcome in try send(notification, via: connector, to: devices) {
///     if outcome.rejection?.reason == .unregistered { await forget(outcome.device) }
/// }
/// ```
/// - Parameters:
///   - maximumInFlight: Requests started and not yet read, at most; by default the connector's
///     ``Connector/concurrencyLimit``.
///   - timeout: Each device's deadline, counted from when its request is started, retries
///     included; nil uses the connector's `TransportConfiguration.requestTimeout`.
///   - retry: When a device's send tries again on its own (``RetryPolicy``); none by default. A
///     device waiting for its retry keeps its place among the `maximumInFlight`.
/// - Throws: ``APNsError/validation(_:)`` at once if the notification or an option is invalid
///   (nothing is sent).
public func send<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) throws(APNsError) -> BulkSendResults where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight, timeout: timeout,
        retry: retry)
}

/// Sends one notification to many devices through a certificate connector; see the token variant.
///
/// ```swift
/// for try await outcome in try send(notification, via: certificateConnector, to: devices) { … }
/// ```
/// - Throws: ``APNsError/validation(_:)`` at once if the notification or an option is invalid
///   (nothing is sent).
public func send<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) throws(APNsError) -> BulkSendResults where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight, timeout: timeout,
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
    public typealias Element = BulkOutcome
    public typealias Failure = APNsError

    /// A device and what the connector returned for it, before interpretation.
    typealias Raw = (device: Device, result: Result<HTTPResponse, any Error>)

    private let start: @Sendable (BulkChannel<Raw>) -> Task<Void, Never>
    private let limit: Int
    /// Set by the first iteration, shared by every copy.
    private let iterated = IterationFlag()

    init<Notification: PushNotification, Via: Connector, Devices: Sequence & Sendable>(
        notification: Notification, connector: Via, devices: Devices, maximumInFlight: Int?, timeout: Duration?,
        retry: RetryPolicy
    ) throws(APNsError) where Devices.Element == Device {
        try retry.validate()
        // Validate and serialise once; each device only changes the path.
        let template: APNsRequest
        do { template = try notification.request(to: Device(tokenBytes: [0])) } catch { throw .validation(error) }
        if let timeout, timeout <= .zero { throw .validation(.invalidTimeout(timeout)) }
        if let maximumInFlight, maximumInFlight < 1 {
            throw .validation(.invalidTransportSetting(name: "maximumInFlight", value: "\(maximumInFlight)"))
        }
        limit = Swift.max(1, maximumInFlight ?? connector.concurrencyLimit)
        start = { channel in
            Task {
                if let direct = connector as? any BatchSubmitting {
                    await BulkSendResults.produce(template, devices: devices, into: channel, via: direct, timeout: timeout, retry: retry)
                } else {
                    await BulkSendResults.produce(template, devices: devices, into: channel, via: connector, timeout: timeout, retry: retry)
                }
                channel.finish()
            }
        }
    }

    /// The most devices started with one call to the connector.
    static let batchSize = 64

    /// swift-apns' own connectors: each batch of devices is handed to the transport at once, and
    /// results come back on its thread straight into the channel — no task per device.
    private static func produce<Devices: Sequence>(
        _ template: APNsRequest, devices: Devices, into channel: BulkChannel<Raw>, via connector: any BatchSubmitting,
        timeout: Duration?, retry: RetryPolicy
    ) async where Devices.Element == Device {
        let owner = BulkOwner()
        channel.onClose { connector.cancelAll(ownedBy: owner) }
        let timeout = timeout ?? connector.defaultTimeout
        /// Hands a device's result to the reader, or, when the policy says so and the deadline leaves
        /// room, sends it again after the back-off (on a task of its own: retries are the rare path).
        @Sendable func completion(attempt: Int, deadline: ContinuousClock.Instant) -> @Sendable (Device?, Result<HTTPResponse, any Error>) -> Void {
            { device, result in
                guard let device else { return }
                if attempt < retry.maximumAttempts, !owner.isCancelled, let failure = BulkSendResults.failure(in: result),
                    let delay = retry.delay(after: failure, attempt: attempt), ContinuousClock.now + delay < deadline
                {
                    Task {
                        try? await Task.sleep(for: delay)
                        guard !owner.isCancelled else { return channel.deliver((device, result)) }
                        connector.submit(
                            template, to: [device], deadline: deadline, owner: owner,
                            completion: completion(attempt: attempt + 1, deadline: deadline))
                    }
                } else {
                    channel.deliver((device, result))
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
            let deadline = ContinuousClock.now + timeout
            connector.submit(template, to: batch, deadline: deadline, owner: owner, completion: completion(attempt: 1, deadline: deadline))
            if batch.count < permits { return }
        }
    }

    /// Any other connector (a recording connector, your own): one child task per device.
    private static func produce<Devices: Sequence, Via: Connector>(
        _ template: APNsRequest, devices: Devices, into channel: BulkChannel<Raw>, via connector: Via, timeout: Duration?,
        retry: RetryPolicy
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
                    let deadline = APNs.deadline(afterValid: timeout, via: connector, retry: retry)  // checked in init
                    group.addTask {
                        switch await attempt(request, via: connector, deadline: deadline, retry: retry) {
                        case .success(let response): channel.deliver((device, .success(response)))
                        case .failure(let error): channel.deliver((device, .failure(error)))
                        }
                    }
                    started += 1
                }
                channel.giveBack(permits - started)
                if started < permits { return }
            }
        }
    }

    /// The failure a raw result stands for, if any.
    static func failure(in result: Result<HTTPResponse, any Error>) -> APNsError? {
        switch result {
        case .success(let response): return (200..<300).contains(response.status) ? nil : .rejected(APNsRejection(response))
        case .failure(let error): return APNsError(wrapping: error)
        }
    }

    /// Starts the bulk send, the first time; any later iterator throws
    /// ``APNsError/bulkResultsAlreadyIterated`` from its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        guard iterated.claim() else { return Iterator(channel: nil, task: nil) }
        let channel = BulkChannel<Raw>(limit: limit)
        return Iterator(channel: channel, task: start(channel))
    }

    /// Reads outcomes; when the iterator is released, the bulk send is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = BulkOutcome
        public typealias Failure = APNsError

        let channel: BulkChannel<Raw>?
        let producer: Producer?

        init(channel: BulkChannel<Raw>?, task: Task<Void, Never>?) {
            self.channel = channel
            if let channel, let task { producer = Producer(task: task, channel: channel) } else { producer = nil }
        }

        public mutating func next() async throws(APNsError) -> BulkOutcome? {
            try await Iterator.receive(from: channel, producer: producer)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(APNsError) -> BulkOutcome? {
            try await Iterator.receive(from: channel, producer: producer)
        }

        private static func receive(from channel: BulkChannel<Raw>?, producer: Producer?) async throws(APNsError) -> BulkOutcome? {
            guard let channel else { throw .bulkResultsAlreadyIterated }
            let raw = await withTaskCancellationHandler {
                await channel.receive()
            } onCancel: { [producer] in
                producer?.cancel()
            }
            guard let (device, result) = raw else { return nil }
            switch result {
            case .success(let response):
                do {
                    return BulkOutcome(device: device, result: .success(try APNsResponse(interpreting: response)))
                } catch {
                    return BulkOutcome(device: device, result: .failure(.rejected(error)))
                }
            case .failure(let error):
                return BulkOutcome(device: device, result: .failure(APNsError(wrapping: error)))
            }
        }
    }

    /// Whether a bulk send's results were iterated; shared by every copy of the value.
    final class IterationFlag: Sendable {
        private let claimed = Atomic<Bool>(false)
        /// True for the first caller only.
        func claim() -> Bool { claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
    }

    /// Cancels the sending task when the last iterator copy goes away.
    final class Producer: Sendable {
        let task: Task<Void, Never>
        let channel: BulkChannel<Raw>
        init(task: Task<Void, Never>, channel: BulkChannel<Raw>) {
            self.task = task
            self.channel = channel
        }
        func cancel() {
            task.cancel()
            channel.close()
        }
        deinit { cancel() }
    }
}

/// Connectors whose transport starts many requests without a task each: swift-apns' own. Bulk
/// sends use it when the connector has it, and tasks otherwise.
protocol BatchSubmitting: Sendable, DefaultTimeout {
    /// Starts `template` once per device (each to the device's path); `completion` gets exactly
    /// one call per device, on the transport's thread.
    func submit(
        _ template: APNsRequest, to devices: [Device], deadline: ContinuousClock.Instant?, owner: BulkOwner,
        completion: @escaping @Sendable (Device?, Result<HTTPResponse, any Error>) -> Void)

    /// Cancels what `submit` started with `owner` and has not finished, and refuses what it starts
    /// with `owner` later.
    func cancelAll(ownedBy owner: BulkOwner)
}

extension Connector {
    /// 100, for connectors that do not say.
    public var concurrencyLimit: Int { 100 }
}
