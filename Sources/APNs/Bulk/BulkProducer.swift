/// The two producers of a bulk send: each reads devices as the channel hands out permits, starts
/// their requests and delivers every device's result into the channel. A device's send retries as
/// every send does (``RetryPolicy/wait(after:attempt:deadline:now:)``, then
/// ``RetryPolicy/waitToRetry(after:failure:on:)``), within its own deadline
/// (``SendDeadline``), counted from when its request is started.
extension BulkSendResults {
    /// The most devices started with one call to the connector.
    static let batchSize = 64

    /// swift-apns' own connectors: each batch of devices is handed to the transport at once, and
    /// results come back on its thread straight into the channel — no task per device.
    static func produce<Devices: Sequence>(
        _ template: APNsRequest, devices: Devices, apnsID: (@Sendable (Device) -> APNsID)?,
        into channel: BulkChannel<DeviceResult>,
        via engine: ConnectorEngine, timeout: Duration?, retry: RetryPolicy
    ) async where Devices.Element == Device {
        let group = TransferGroup()
        let observability = engine.observability
        channel.onClose { engine.cancelAll(in: group) }
        let clock = engine.clock
        /// A device's last result, to the reader.
        @Sendable func finish(
            _ device: Device, _ result: Result<APNsResponse, APNsError>, attempt: Int, started: ContinuousClock.Instant
        ) {
            if observability.isEnabled { observability.sendsInFlight.decrement() }
            channel.deliver(DeviceResult(device, result, clock.now - started, attempt))
        }
        /// Hands a device's result to the reader, or, when the policy says so and the deadline leaves
        /// room, sends it again after the back-off (``RetryPolicy/waitToRetry(after:failure:on:)``, on
        /// a task of its own that the bulk send's cancellation cancels: retries are the rare path).
        @Sendable func completion(
            attempt: Int, deadline: ContinuousClock.Instant, started: ContinuousClock.Instant
        ) -> @Sendable (Device, Result<APNsResponse, APNsError>) -> Void {
            { device, result in
                if attempt < retry.maximumAttempts, !group.isCancelled, case .failure(let failure) = result,
                    let delay = retry.wait(after: failure, attempt: attempt, deadline: deadline, now: clock.now)
                {
                    group.waiting {
                        var ending = await RetryPolicy.waitToRetry(after: delay, failure: failure, on: clock)
                        if ending == nil, group.isCancelled { ending = RetryPolicy.endingCancelledWait(after: failure) }
                        if let ending { return finish(device, .failure(ending), attempt: attempt, started: started) }
                        engine.submit(
                            checked: template, to: [device], apnsID: apnsID, deadline: deadline, group: group,
                            completion: completion(attempt: attempt + 1, deadline: deadline, started: started))
                    }
                } else {
                    finish(device, result, attempt: attempt, started: started)
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
            guard !batch.isEmpty, !group.isCancelled else { return }
            let started = clock.now
            let deadline = SendDeadline.of(timeout: timeout, from: started, engine: engine)
            if observability.isEnabled { observability.sendsInFlight.increment(by: Double(batch.count)) }
            engine.submit(
                checked: template, to: batch, apnsID: apnsID, deadline: deadline, group: group,
                completion: completion(attempt: 1, deadline: deadline, started: started))
            if batch.count < permits { return }
        }
    }

    /// Any other connector (a recording connector, your own): one child task per device, each a
    /// single send's attempts.
    static func produce<Devices: Sequence, Via: Connector>(
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
                    group.addTask {
                        let started = ContinuousClock.now
                        let deadline = SendDeadline.of(timeout: timeout, from: started, engine: nil, retry: retry)
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
