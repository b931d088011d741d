import APNs
import Foundation
import Logging

/// Recording what a send did: each device-send's outcome (done, queued again with back-off, or
/// finished), the pause an upstream cause starts and the answer that ends it, and the outcomes
/// written back in batches.
extension Dispatcher {
    /// The outcome of one device-send's send: done, queued again, or finished as failed or
    /// expired. A cause upstream pauses sending (``UpstreamPause``) and queues the device-send for
    /// the pause's end without spending an attempt; any other answer from APNs ends a pause.
    func record(
        _ result: Result<APNsResponse, APNsError>, _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery,
        app: String, credential: String, expiresAt: Date
    ) -> DeliveryOutcome {
        if let cause = UpstreamCause.of(result) {
            let retryAt = paused(credential, by: cause, result)
            let (kind, message) = Self.failureText(result)
            var outcome = DeliveryOutcome(
                notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app,
                errorKind: kind.rawValue, delivery: Delivery.notSent.rawValue, message: message, retryAt: retryAt,
                countsAsAttempt: false)
            if retryAt >= expiresAt { outcome = expired(claimed, delivery, app: app, at: expiresAt, after: message) }
            return outcome
        }
        var record = DeliveryOutcome(
            notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app)
        switch result {
        case .success(let response):
            resumed(credential)
            record.status = response.status
            record.apnsID = response.apnsID?.description
        case .failure(.rejected(let rejection)):
            resumed(credential)
            if rejection.reason == .tooManyRequests, let retryAt = retry(delivery, after: rejection),
                retryAt < expiresAt
            {
                // Too many pushes to this device: its own failure, an attempt spent.
                record.errorKind = FailureKind.rejected.rawValue
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
        case .failure where UpstreamCause.isUnanswered(result):
            // Written and never answered: it may have been delivered, so it is final; the
            // credential pauses so that its next sends do not meet the same silence.
            _ = paused(credential, by: .unanswered, result)
            let (kind, message) = Self.failureText(result)
            return finished(claimed, delivery, app: app, kind: kind, delivery: .unknown, message: message)
        case .failure(.transport(let failure))
        where failure.delivery == .notSent && (failure.kind == .cancelled || failure.kind == .shutDown):
            // This sender stopping, not the device-send failing: queued again, no attempt spent.
            record.errorKind = failure.kind.rawValue
            record.delivery = failure.delivery.rawValue
            record.message = failure.description
            record.retryAt = soonAgain()
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
    static func failureText(_ result: Result<APNsResponse, APNsError>) -> (kind: FailureKind, message: String) {
        switch result {
        case .success: return (FailureKind(rawValue: ""), "")
        case .failure(.transport(let failure)): return (FailureKind(failure.kind), failure.description)
        case .failure(.rejected(let rejection)): return (.rejected, rejection.description)
        case .failure(.validation(let error)): return (.invalid, error.description)
        case .failure(.credential(let error)): return (.credential, error.description)
        case .failure(let error): return (.other, error.description)
        }
    }

    /// When a device-send that APNs refused on its own account is due again, or nil when its
    /// attempts are spent: the library's ``RetryPolicy/delay(after:attempt:)`` with
    /// ``Configuration/requeue``, so no sooner than APNs' `Retry-After`.
    func retry(_ delivery: ClaimedDelivery, after rejection: APNsRejection) -> Date? {
        guard let wait = configuration.requeue.delay(after: .rejected(rejection), attempt: delivery.attempts + 1)
        else { return nil }
        return clock.now + wait
    }

    /// A final failure without an answer.
    func finished(
        _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, app: String, kind: FailureKind,
        delivery sent: Delivery, message: String
    ) -> DeliveryOutcome {
        DeliveryOutcome(
            notificationID: claimed.id, position: delivery.position, token: delivery.token, app: app,
            errorKind: kind.rawValue, delivery: sent.rawValue, message: message)
    }

    /// A device-send whose notification expired before it could be sent: finished, never sent.
    func expired(
        _ claimed: ClaimedNotification, _ delivery: ClaimedDelivery, app: String, at expiry: Date, after last: String?
    ) -> DeliveryOutcome {
        var message =
            "not sent: the notification expired (at \(Int(expiry.timeIntervalSince1970)) UNIX seconds) before it could be sent"
        if let last { message += "; the last try: \(last)" }
        var outcome = finished(claimed, delivery, app: app, kind: .expired, delivery: .notSent, message: message)
        outcome.countsAsAttempt = false
        return outcome
    }

    /// A send through `credential` failed for `cause`: its sending pauses (or stays paused);
    /// returns when the device-send is due again.
    func paused(_ credential: String, by cause: UpstreamCause, _ result: Result<APNsResponse, APNsError>) -> Date {
        var retryAfter: Duration?
        if case .failure(.rejected(let rejection)) = result { retryAfter = rejection.retryAfter }
        let now = clock.now
        let (change, resumesAt) = pauses.withLock {
            (
                $0.failed(
                    credential, cause, retryAfter: retryAfter, at: now, jitter: Double.random(in: 0.8...1.2)),
                $0.resumesAt(credential, now)
            )
        }
        let probeIn = resumesAt - now
        switch change {
        case .paused(let cause, _)?:
            paused.paused(credential, cause)
            let (kind, message) = Self.failureText(result)
            logger.warning(
                "sending paused: \(Self.explanation(of: cause)); device-sends wait without spending attempts",
                metadata: [
                    "cause": "\(cause.rawValue)", "credential": "\(credential)",
                    "probe_in_ms": "\(Int(probeIn.seconds * 1000))", "error.type": "\(kind)",
                    "error.message": "\(message)",
                ])
        case .stillPaused(let cause, _)?:
            logger.info(
                "still paused: the probe met the same cause",
                metadata: [
                    "cause": "\(cause.rawValue)", "credential": "\(credential)",
                    "probe_in_ms": "\(Int(probeIn.seconds * 1000))",
                ])
        case .resumed?, nil:
            break
        }
        return resumesAt
    }

    /// APNs answered a send through `credential` with something other than trouble upstream:
    /// its pause ends.
    func resumed(_ credential: String) {
        guard case .resumed(let cause)? = pauses.withLock({ $0.answered(credential) }) else { return }
        paused.clear(credential)
        logger.notice(
            "sending resumed: APNs answered", metadata: ["cause": "\(cause.rawValue)", "credential": "\(credential)"])
    }

    /// What a cause means, for the log.
    static func explanation(of cause: UpstreamCause) -> String {
        switch cause {
        case .unreachable: "APNs cannot be reached"
        case .serverError: "APNs answers with server errors"
        case .credentials: "APNs refuses the credential"
        case .unanswered: "APNs does not answer (sends timed out after they were written)"
        }
    }

    /// Writes outcomes back, then counts them (what was written, so a reader of the counter finds
    /// them in the store).
    func write(_ outcomes: [DeliveryOutcome]) async {
        guard !outcomes.isEmpty else { return }
        // The outcome of a send is not lost to a passing database error: try again while the
        // lease keeps the device-sends ours. After that they are claimed and sent again.
        let backoff = Backoff(initial: .milliseconds(50), maximum: .seconds(5), jitter: 0)
        var failures = 0
        let giveUp = clock.now + configuration.lease
        while true {
            do {
                _ = try await store.complete(outcomes, owner: owner, now: clock.now)
                var counts: [[String]: Int] = [:]
                for outcome in outcomes { counts[[OutcomeResult(outcome).rawValue, outcome.app], default: 0] += 1 }
                for (key, count) in counts { results.increment(app: key[1], [("result", key[0])], by: count) }
                return
            } catch {
                failures += 1
                let delay = backoff.delay(beforeRetry: failures)
                guard clock.now + delay < giveUp else {
                    logger.error(
                        "writing outcomes failed until the lease ran out: these device-sends will be sent again",
                        metadata: ["error": "\(DatabaseFailure(error))", "outcomes": "\(outcomes.count)"])
                    return
                }
                logger.warning(
                    "writing outcomes failed; retrying",
                    metadata: ["error": "\(DatabaseFailure(error))", "outcomes": "\(outcomes.count)"])
                try? await clock.sleep(for: delay)
            }
        }
    }
}
