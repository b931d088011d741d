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
/// The payload is serialised once; at most `maximumInFlight` requests are outstanding (by default
/// what the connector's connections carry at once); and the sequence has back-pressure: when the
/// consumer stops reading, sending pauses, so memory stays flat for any number of devices.
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
/// Iterate it once. Sending starts when iteration starts and follows the consumer's pace.
public struct BulkSendResults: AsyncSequence, Sendable {
    public typealias Element = BulkOutcome

    private let start: @Sendable (BoundedBuffer<BulkOutcome>) -> Task<Void, Never>
    private let bufferCapacity: Int

    init<Notification: PushNotification, Via: Connector, Devices: Sequence & Sendable>(
        notification: Notification, connector: Via, devices: Devices, maximumInFlight: Int?
    ) throws(APNsValidationError) where Devices.Element == Device {
        // Validate and serialise once; each device only changes the path.
        let template = try notification.request(to: Device(tokenBytes: [0]))
        let limit = Swift.max(1, maximumInFlight ?? connector.concurrencyLimit)
        bufferCapacity = limit
        start = { buffer in
            Task {
                await withTaskGroup(of: BulkOutcome.self) { group in
                    var inFlight = 0
                    for device in devices {
                        if Task.isCancelled { break }
                        if inFlight >= limit, let outcome = await group.next() {
                            inFlight -= 1
                            guard await buffer.send(outcome) else { break }
                        }
                        var request = template
                        request.path = device.path
                        group.addTask {
                            do {
                                return BulkOutcome(device: device, result: .success(try await deliver(request, via: connector)))
                            } catch {
                                return BulkOutcome(device: device, result: .failure(error))
                            }
                        }
                        inFlight += 1
                    }
                    while let outcome = await group.next() {
                        guard await buffer.send(outcome) else { group.cancelAll(); continue }
                    }
                }
                await buffer.finish()
            }
        }
    }

    public func makeAsyncIterator() -> Iterator {
        let buffer = BoundedBuffer<BulkOutcome>(capacity: bufferCapacity)
        return Iterator(buffer: buffer, task: start(buffer))
    }

    /// Reads outcomes; when the iterator is released, the bulk send is cancelled.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: BoundedBuffer<BulkOutcome>
        let producer: Producer

        init(buffer: BoundedBuffer<BulkOutcome>, task: Task<Void, Never>) {
            self.buffer = buffer
            producer = Producer(task: task, buffer: buffer)
        }

        public mutating func next() async -> BulkOutcome? {
            await withTaskCancellationHandler {
                await buffer.receive()
            } onCancel: { [producer] in
                producer.cancel()
            }
        }
    }

    /// Cancels the sending task when the last iterator copy goes away.
    final class Producer: Sendable {
        let task: Task<Void, Never>
        let buffer: BoundedBuffer<BulkOutcome>
        init(task: Task<Void, Never>, buffer: BoundedBuffer<BulkOutcome>) {
            self.task = task
            self.buffer = buffer
        }
        func cancel() {
            task.cancel()
            buffer.close()
        }
        deinit { cancel() }
    }
}

extension Connector {
    /// 100, for connectors that do not say.
    public var concurrencyLimit: Int { 100 }
}
