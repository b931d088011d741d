import APNs
import Crypto
import Foundation
import Synchronization
import Tracing

/// Sending a claimed notification: to its devices through the library's bulk path (recorded as
/// started first when it is at most once), or to its broadcast channel; each device-send's apns-id
/// derived from the notification.
extension Dispatcher {
    /// Sends a claimed notification; when it was accepted under a trace, in a span that is a child
    /// of the request that accepted it, with the library's send spans as its children.
    func send(_ claimed: ClaimedNotification) async {
        guard let traceParent = claimed.traceParent else { return await sendUntraced(claimed) }
        await withSpan("apns-gateway.send", context: TraceParent.context(traceParent), ofKind: .consumer) { span in
            span.attributes["apns_gateway.notification.id"] = claimed.id
            span.attributes["apns_gateway.app"] = claimed.app
            span.attributes["apns_gateway.device_sends"] = claimed.deliveries.count
            await sendUntraced(claimed)
        }
    }

    private func sendUntraced(_ claimed: ClaimedNotification) async {
        if claimed.cancelled {
            // Cancelled after these were claimed, before this sender started them: not sent. One an
            // earlier holder recorded as started may have been.
            await write(
                claimed.deliveries.map {
                    var outcome = finished(
                        claimed, $0, app: claimed.app, kind: .cancelled,
                        delivery: $0.mayHaveBeenSent ? .unknown : .notSent,
                        message: "not sent: the notification was cancelled (DELETE) before this device-send was sent")
                    outcome.countsAsAttempt = false
                    return outcome
                })
            return
        }
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
                    finished(claimed, $0, app: "", kind: .invalid, delivery: .notSent, message: error.description)
                })
            return
        }
        do {
            try await connectors.withConnector(for: spec.app, environment: spec.environment) { connector, credential in
                await self.send(claimed, spec, via: connector, of: credential)
            }
        } catch {
            // No connector can send it (its app has no credential now, or not for its
            // environment): nothing was sent by this try; one an earlier holder started may have
            // been, and says so.
            logger.error(
                "no connector for a notification's app",
                metadata: ["notification": "\(claimed.id)", "app": "\(spec.app)", "problem": "\(error)"])
            await write(
                claimed.deliveries.map {
                    finished(
                        claimed, $0, app: spec.app, kind: .credential,
                        delivery: $0.mayHaveBeenSent ? .unknown : .notSent, message: error.description)
                })
        }
    }

    /// Sends a claimed notification through `connector`, its app's for its environment, of the
    /// credential named `credential`.
    private func send(
        _ claimed: ClaimedNotification, _ spec: NotificationSpec, via connector: AnyConnector, of credential: String
    ) async {
        let expiresAt = expiry(of: spec, acceptedAt: claimed.createdAt)
        let expired = clock.now >= expiresAt
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
                        claimed, delivery, app: spec.app, kind: .interrupted, delivery: .unknown,
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
                pending.append(
                    await broadcast(spec, claimed, delivery, expiresAt: expiresAt, via: connector, of: credential))
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
                        claimed, delivery, app: spec.app, kind: .invalid, delivery: .notSent,
                        message: error.description))
            }
        }
        await write(pending)
        guard !devices.isEmpty else { return }
        // Devices go through the bulk path (a channel's notification has none).
        let sending = Sending(
            claimed: claimed, spec: spec, byToken: byToken, ids: ids, expiresAt: expiresAt, connector: connector,
            credential: credential)
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
                guard mayStart(credential) else { break }  // this group and the rest are queued again below
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
            let (retryAt, why) = notStarted(credential)
            await write(
                unstarted.compactMap { byToken[$0.token] }.map {
                    stopped(claimed, $0, app: spec.app, retryAt: retryAt, why: why)
                })
        }
    }

    /// When a notification expires: at its `expiration`, when it gave one (not 0), else
    /// ``Configuration/maximumAge`` after it was due (accepted, or its `send-at`).
    func expiry(of spec: NotificationSpec, acceptedAt: Date) -> Date {
        if let seconds = spec.notification.expiration?.unixSeconds, seconds > 0 {
            return Date(timeIntervalSince1970: Double(seconds))
        }
        return max(acceptedAt, spec.sendAt ?? acceptedAt).addingTimeInterval(configuration.maximumAge.seconds)
    }

    /// What ``bulk(_:_:)`` needs of the notification being sent.
    struct Sending: Sendable {
        let claimed: ClaimedNotification
        let spec: NotificationSpec
        let byToken: [String: ClaimedDelivery]
        let ids: [String: APNsID]
        let expiresAt: Date
        let connector: AnyConnector
        let credential: String
    }

    /// Records `deliveries` as started (an at-most-once notification's, before they may be sent);
    /// whether all of them were. When not (the database failed, or the lease was lost), none is
    /// sent, and they are queued again — they were not.
    func markStarted(_ claimed: ClaimedNotification, _ deliveries: [ClaimedDelivery], app: String) async -> Bool {
        do {
            let marked = try await store.markStarted(
                notificationID: claimed.id, positions: deliveries.map(\.position), owner: owner, now: clock.now)
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
            deliveries.map { stopped(claimed, $0, app: app, retryAt: soonAgain(), why: why) })
        return false
    }

    /// Sends one notification to `devices` through the library's bulk path, writing outcomes as
    /// they come; devices it never started (the lease came into doubt, or sending paused) are
    /// queued again.
    func bulk(_ devices: [Device], _ sending: Sending) async {
        let (claimed, spec, byToken, ids) = (sending.claimed, sending.spec, sending.byToken, sending.ids)
        var pending: [DeliveryOutcome] = []
        // The devices that have their outcome from the bulk send (some may be written already).
        var answered: Set<String> = []
        // The batch of outcomes being written, if any (awaited before the next, and at the end).
        var writing: Task<Void, Never>?
        // Read as sending progresses: none is started once the lease is in doubt or sending paused.
        let credential = sending.credential
        let startable = StoppableDevices(devices: devices) { [self] in !mayStart(credential) }
        do {
            let results = try bulkSendOutcomes(
                spec.notification, via: sending.connector, to: startable, timeout: configuration.timeout,
                retry: configuration.retry,
                apnsID: { device in ids[device.token] ?? APNsID() })
            var lastWrite = clock.now
            for try await outcome in results {
                guard let delivery = byToken[outcome.device.token] else { continue }
                answered.insert(outcome.device.token)
                pending.append(
                    record(
                        outcome.result, claimed, delivery, app: spec.app, credential: credential,
                        expiresAt: sending.expiresAt))
                if pending.count >= configuration.writeBatch
                    || clock.now - lastWrite >= configuration.writeInterval
                {
                    // One batch is written while the next is collected: the bulk send follows
                    // this loop's pace, so waiting here for the database would idle the
                    // connection. Never more than one write of this send in flight.
                    await writing?.value
                    let batch = pending
                    writing = Task { await self.write(batch) }
                    pending.removeAll(keepingCapacity: true)
                    lastWrite = clock.now
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
                        claimed, delivery, app: spec.app, kind: .invalid, delivery: .notSent, message: "\(error)"))
            }
        }
        // Devices the bulk send never read were never started (the lease came into doubt, or
        // sending paused): provably unsent, queued again.
        let (retryAt, why) = notStarted(credential)
        for device in devices[startable.handedOut...] where !answered.contains(device.token) {
            guard let delivery = byToken[device.token] else { continue }
            pending.append(stopped(claimed, delivery, app: spec.app, retryAt: retryAt, why: why))
        }
        await writing?.value
        await write(pending)
    }

    /// When device-sends of `credential` this sender did not start are due again, and why they
    /// were not: the pause's end while its sending is paused, else (the lease in doubt)
    /// ``soonAgain()``.
    func notStarted(_ credential: String) -> (Date, String) {
        let now = clock.now
        let (resumesAt, cause) = pauses.withLock { ($0.resumesAt(credential, now), $0.cause(of: credential)) }
        guard let cause else {
            return (soonAgain(), "not started: this instance stopped sending while its lease was in doubt")
        }
        return (resumesAt, "not started: sending is paused (\(cause.rawValue))")
    }

    /// When a device-send this sender let go of for a reason of its own (it is stopping, its lease
    /// is in doubt, its record as started could not be written) is due again: soon, but not in
    /// the claim that follows at once, which would find the same reason.
    func soonAgain() -> Date { clock.now + Self.requeueDelay }

    /// How long ``soonAgain()`` waits.
    static let requeueDelay: Duration = .seconds(1)

    /// A device-send this instance did not start: queued again, not sent, no attempt spent.
    func stopped(
        _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, app: String, retryAt: Date, why: String
    ) -> DeliveryOutcome {
        DeliveryOutcome(
            notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app,
            errorKind: FailureKind.stopped.rawValue, delivery: Delivery.notSent.rawValue, message: why,
            retryAt: retryAt,
            countsAsAttempt: false)
    }

    /// Sends a Live Activity update or end to its broadcast channel (one request for every
    /// subscribed device).
    func broadcast(
        _ spec: NotificationSpec, _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, expiresAt: Date,
        via connector: AnyConnector, of credential: String
    ) async -> DeliveryOutcome {
        let id = String(delivery.token.dropFirst(NotificationRequest.channelPrefix.count))
        guard let notification = spec.notification as? any BroadcastDeliverable,
            let channel = try? BroadcastChannel(id: id, bundleID: spec.app)
        else {
            return finished(
                claimed, delivery, app: spec.app, kind: .invalid, delivery: .notSent,
                message: "not a channel notification")
        }
        guard mayStart(credential) else {
            let (retryAt, why) = notStarted(credential)
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
        var outcome = record(result, claimed, delivery, app: spec.app, credential: credential, expiresAt: expiresAt)
        if case .success(let response) = result, outcome.apnsID == nil { outcome.apnsID = response.requestID }
        return outcome
    }

    package static func apnsID(notification: String, position: Int) -> APNsID {
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
