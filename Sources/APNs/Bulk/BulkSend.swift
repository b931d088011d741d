/// The result for one device of a bulk send: accepted (with its apns-id) or its error
/// (``APNsRejection``, ``TransportError``, `CancellationError`).
public struct BulkOutcome: Sendable {
    public let device: Device
    public let result: Result<APNsResponse, any Error>

    /// The rejection, when APNs refused this device (for example to drop `.unregistered` tokens).
    public var rejection: APNsRejection? {
        if case .failure(let error as APNsRejection) = result { return error }
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
/// for await outcome in try send(notification, via: connector, to: devices) {
///     if outcome.rejection?.reason == .unregistered { await forget(outcome.device) }
/// }
/// ```
/// - Throws: ``APNsValidationError`` at once if the notification itself is invalid (nothing is sent).
public func send<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil
) throws(APNsValidationError) -> BulkSendResults where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    try BulkSendResults(notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight)
}

/// Sends one notification to many devices through a certificate connector; see the token variant.
///
/// ```swift
/// for await outcome in try send(notification, via: certificateConnector, to: devices) { … }
/// ```
/// - Throws: ``APNsValidationError`` at once if the notification itself is invalid (nothing is sent).
public func send<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil
) throws(APNsValidationError) -> BulkSendResults where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    try BulkSendResults(notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight)
}

/// The outcomes of a bulk send, one per device, in the order responses arrive.
///
/// Iterate it once. Sending starts when iteration starts and follows the consumer's pace: at most
/// `maximumInFlight` requests are started and not yet read.
public struct BulkSendResults: AsyncSequence, Sendable {
    public typealias Element = BulkOutcome

    /// A device and what the connector returned for it, before interpretation.
    typealias Raw = (device: Device, result: Result<HTTPResponse, any Error>)

    private let start: @Sendable (BulkChannel<Raw>) -> Task<Void, Never>
    private let limit: Int

    init<Notification: PushNotification, Via: Connector, Devices: Sequence & Sendable>(
        notification: Notification, connector: Via, devices: Devices, maximumInFlight: Int?
    ) throws(APNsValidationError) where Devices.Element == Device {
        // Validate and serialise once; each device only changes the path.
        let template = try notification.request(to: Device(tokenBytes: [0]))
        limit = Swift.max(1, maximumInFlight ?? connector.concurrencyLimit)
        start = { channel in
            Task {
                if let direct = connector as? any BatchSubmitting {
                    await BulkSendResults.produce(template, devices: devices, into: channel, via: direct)
                } else {
                    await BulkSendResults.produce(template, devices: devices, into: channel, via: connector)
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
        _ template: APNsRequest, devices: Devices, into channel: BulkChannel<Raw>, via connector: any BatchSubmitting
    ) async where Devices.Element == Device {
        let owner = ObjectIdentifier(channel)
        channel.onClose { connector.cancelAll(ownedBy: owner) }
        let deliver: @Sendable (Device?, Result<HTTPResponse, any Error>) -> Void = { device, result in
            if let device { channel.deliver((device, result)) }
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
            guard !batch.isEmpty else { return }
            connector.submit(template, to: batch, owner: owner, completion: deliver)
            if batch.count < permits { return }
        }
    }

    /// Any other connector (a recording connector, your own): one child task per device.
    private static func produce<Devices: Sequence, Via: Connector>(
        _ template: APNsRequest, devices: Devices, into channel: BulkChannel<Raw>, via connector: Via
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
                    group.addTask {
                        do {
                            channel.deliver((device, .success(try await connector.perform(request))))
                        } catch {
                            channel.deliver((device, .failure(error)))
                        }
                    }
                    started += 1
                }
                channel.giveBack(permits - started)
                if started < permits { return }
            }
        }
    }

    public func makeAsyncIterator() -> Iterator {
        let channel = BulkChannel<Raw>(limit: limit)
        return Iterator(channel: channel, task: start(channel))
    }

    /// Reads outcomes; when the iterator is released, the bulk send is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        let channel: BulkChannel<Raw>
        let producer: Producer

        init(channel: BulkChannel<Raw>, task: Task<Void, Never>) {
            self.channel = channel
            producer = Producer(task: task, channel: channel)
        }

        public mutating func next() async -> BulkOutcome? {
            let raw = await withTaskCancellationHandler {
                await channel.receive()
            } onCancel: { [producer] in
                producer.cancel()
            }
            guard let (device, result) = raw else { return nil }
            switch result {
            case .success(let response):
                do {
                    return BulkOutcome(device: device, result: .success(try APNsResponse(interpreting: response)))
                } catch {
                    return BulkOutcome(device: device, result: .failure(error))
                }
            case .failure(let error):
                return BulkOutcome(device: device, result: .failure(error))
            }
        }
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
protocol BatchSubmitting: Sendable {
    /// Starts `template` once per device (each to the device's path); `completion` gets exactly
    /// one call per device, on the transport's thread.
    func submit(
        _ template: APNsRequest, to devices: [Device], owner: ObjectIdentifier,
        completion: @escaping @Sendable (Device?, Result<HTTPResponse, any Error>) -> Void)

    /// Cancels what `submit` started with `owner` and has not finished.
    func cancelAll(ownedBy owner: ObjectIdentifier)
}

extension Connector {
    /// 100, for connectors that do not say.
    public var concurrencyLimit: Int { 100 }
}
