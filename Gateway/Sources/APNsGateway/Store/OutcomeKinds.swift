import APNs

/// The kind of a device-send's failure without an answer from APNs, as an outcome records it
/// (``DeliveryOutcome/errorKind``, the API's `error.kind`): the transport's own kinds
/// (``TransportError/Kind-swift.struct``: `timeout`, `connection-lost`, …) and the gateway's.
///
/// A struct with static members, not an enum: the transport's kinds grow with libcurl and APNs,
/// and an outcome stored by a newer gateway must still read.
package struct FailureKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }
    /// A transport failure's kind.
    package init(_ kind: TransportError.Kind) { rawValue = kind.rawValue }

    /// APNs refused it (a 429 TooManyRequests queued again; other refusals carry their status).
    package static let rejected = FailureKind(rawValue: "rejected")
    /// The notification or its device cannot be sent as stored: nothing was sent.
    package static let invalid = FailureKind(rawValue: "invalid")
    /// No credential can send it (its app has none now, or none for its environment).
    package static let credential = FailureKind(rawValue: "credential")
    /// An at-most-once device-send its sender recorded as started and then left without an
    /// outcome: it may have reached APNs, and is not sent again.
    package static let interrupted = FailureKind(rawValue: "interrupted")
    /// This instance did not start it (it stopped, its lease came into doubt, sending paused):
    /// queued again, not sent.
    package static let stopped = FailureKind(rawValue: "stopped")
    /// Its notification expired before it could be sent: finished, never sent.
    package static let expired = FailureKind(rawValue: "expired")
    /// Its notification was cancelled (`DELETE /v1/notifications/{id}`) before it was claimed:
    /// finished, never sent.
    package static let cancelled = FailureKind(rawValue: "cancelled")
    /// Any other failure.
    package static let other = FailureKind(rawValue: "other")

    package var description: String { rawValue }
}

/// What one try of a device-send came to, as the dispatcher counts it
/// (`apns_gateway_device_sends_total`'s `result`) and the API reports it (`state`, `counts`).
package enum OutcomeResult: String, Sendable, CaseIterable {
    /// Not finished: waiting to be claimed or sent (the API's), or queued again (the counter's
    /// ``requeued``).
    case queued
    /// APNs accepted it (200).
    case accepted
    /// APNs refused it with a status.
    case rejected
    /// It failed without an answer.
    case failed
    /// Its notification expired before it could be sent.
    case expired
    /// Its notification was cancelled before it was sent.
    case cancelled
    /// This try ended with it queued again for another.
    case requeued

    /// The result of a try, as written back: queued again, answered, expired or failed.
    package init(_ outcome: DeliveryOutcome) {
        if outcome.retryAt != nil {
            self = .requeued
        } else {
            self = Self(status: outcome.status, errorKind: outcome.errorKind)
        }
    }

    /// Where a device-send stands, as stored: finished (answered, expired or failed) or queued.
    package init(_ record: DeliveryRecord) {
        self = record.state == "done" ? Self(status: record.status, errorKind: record.errorKind) : .queued
    }

    /// A finished try: accepted or refused when APNs answered, else expired or failed.
    private init(status: Int?, errorKind: String?) {
        if let status {
            self = status == 200 ? .accepted : .rejected
        } else {
            switch errorKind {
            case FailureKind.expired.rawValue: self = .expired
            case FailureKind.cancelled.rawValue: self = .cancelled
            default: self = .failed
            }
        }
    }
}
