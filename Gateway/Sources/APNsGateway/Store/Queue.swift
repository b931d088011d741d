import Foundation

// What the store keeps of the queue: notifications as accepted, device-sends as claimed, their
// outcomes as written, progress as read, and the tokens APNs reported unregistered.

/// A notification accepted for queueing.
package struct QueuedNotification: Sendable {
    package var id: String
    package var keyName: String
    package var pushType: String
    package var app: String
    /// ``NotificationRequest/storedJSON``.
    package var storedJSON: String
    /// Device tokens, lower-case hex, in request order (their position is their index).
    package var tokens: [String]
    package var createdAt: Date
    /// When its device-sends are first due: its `send-at`, or when it was accepted.
    package var availableAt: Date
    /// The request's `Idempotency-Key`, when it gave one.
    package var idempotency: Idempotency?
    /// The W3C `traceparent` of the span that accepted it, when tracing is on: its sends are
    /// traced as that span's children, by whichever instance sends them.
    package var traceParent: String?

    package init(
        id: String, keyName: String, pushType: String, app: String, storedJSON: String, tokens: [String],
        createdAt: Date, availableAt: Date? = nil, idempotency: Idempotency? = nil, traceParent: String? = nil
    ) {
        self.traceParent = traceParent
        self.availableAt = availableAt ?? createdAt
        self.id = id
        self.keyName = keyName
        self.pushType = pushType
        self.app = app
        self.storedJSON = storedJSON
        self.tokens = tokens
        self.createdAt = createdAt
        self.idempotency = idempotency
    }
}

/// A request's `Idempotency-Key` and the fingerprint of its body: the store keeps both with the
/// notification, so that a request retried with the same key finds the notification the first
/// made, and one with the same key and another body is told apart.
package struct Idempotency: Sendable, Hashable {
    /// The caller's key, unique among its API key's requests.
    package var key: String
    /// Lower-case hex SHA-256 of the request body.
    package var fingerprint: String

    package init(key: String, fingerprint: String) {
        self.key = key
        self.fingerprint = fingerprint
    }
}

/// What ``GatewayStore/enqueue(_:maximumQueueDepth:)`` did.
package enum EnqueueResult: Sendable, Equatable {
    case accepted
    /// Nothing was stored: the queue held `depth` unfinished device-sends, and the notification's
    /// devices would have taken it past its limit.
    case queueFull(depth: Int)
    /// Nothing was stored: the API key's notification `id` was stored under the same idempotency
    /// key and body.
    case replayed(id: String)
    /// Nothing was stored: the API key's notification `id` was stored under the same idempotency
    /// key with another body.
    case keyReused(id: String)
    /// Nothing was stored: the app had `depth` unfinished device-sends, and the notification's
    /// devices would have taken it past its `quota`.
    case appQuotaFull(depth: Int, quota: Int)
}

/// A notification with the device-sends claimed for it.
package struct ClaimedNotification: Sendable {
    package var id: String
    /// Its app (bundle id, or MDM topic), as its device-sends hold it: which credential's lane it
    /// is sent in, known without reading the stored request.
    package var app: String
    package var storedJSON: String
    package var deliveries: [ClaimedDelivery]
    /// When it was accepted (a notification without an expiration of its own is sent for
    /// ``Dispatcher/Configuration/maximumAge`` from then).
    package var createdAt: Date
    /// ``QueuedNotification/traceParent``.
    package var traceParent: String?
    /// Cancelled (`DELETE`) after these device-sends were claimed (by an instance that has since
    /// stopped, or one about to send them): they are finished as cancelled, not sent.
    package var cancelled: Bool

    package init(
        id: String, app: String, storedJSON: String, deliveries: [ClaimedDelivery], createdAt: Date,
        traceParent: String? = nil, cancelled: Bool = false
    ) {
        self.traceParent = traceParent
        self.cancelled = cancelled
        self.id = id
        self.app = app
        self.storedJSON = storedJSON
        self.deliveries = deliveries
        self.createdAt = createdAt
    }
}

/// One claimed device-send.
package struct ClaimedDelivery: Sendable, Hashable {
    package var position: Int
    package var token: String
    /// Attempts before this one.
    package var attempts: Int
    /// Whether an earlier holder recorded it as started (``GatewayStore/markStarted(notificationID:positions:owner:now:)``)
    /// and left no outcome: it may have reached APNs.
    package var mayHaveBeenSent: Bool

    package init(position: Int, token: String, attempts: Int, mayHaveBeenSent: Bool = false) {
        self.position = position
        self.token = token
        self.attempts = attempts
        self.mayHaveBeenSent = mayHaveBeenSent
    }
}

/// The outcome of one device-send, as written back.
package struct DeliveryOutcome: Sendable, Hashable {
    package var notificationID: String
    package var position: Int
    package var token: String
    package var app: String
    /// APNs' status, when it answered.
    package var status: Int?
    /// APNs' reason for a rejection.
    package var reason: String?
    /// APNs' apns-id (its own when the request carried none).
    package var apnsID: String?
    /// For 410 Unregistered: when the token stopped being valid.
    package var invalidSince: Date?
    /// For a failure without an answer: the kind (timeout, connection, …).
    package var errorKind: String?
    /// For a failure without an answer: `not-sent` or `unknown`.
    package var delivery: String?
    /// A readable description of the failure.
    package var message: String?
    /// Set to queue the device-send again (a failure that was provably not sent), instead of done.
    package var retryAt: Date?
    /// Whether this try counts among the device-send's attempts: false when it was queued again
    /// for a cause outside it (sending paused, the sender stopping), which spends none.
    package var countsAsAttempt: Bool

    package init(
        notificationID: String, position: Int, token: String, app: String, status: Int? = nil, reason: String? = nil,
        apnsID: String? = nil, invalidSince: Date? = nil, errorKind: String? = nil, delivery: String? = nil,
        message: String? = nil, retryAt: Date? = nil, countsAsAttempt: Bool = true
    ) {
        self.notificationID = notificationID
        self.position = position
        self.token = token
        self.app = app
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.invalidSince = invalidSince
        self.errorKind = errorKind
        self.delivery = delivery
        self.message = message
        self.retryAt = retryAt
        self.countsAsAttempt = countsAsAttempt
    }
}

/// Progress of one notification.
package struct NotificationProgress: Sendable, Hashable {
    package var id: String
    package var keyName: String
    package var pushType: String
    package var app: String
    package var createdAt: Date
    package var deliveries: [DeliveryRecord]

    package init(
        id: String, keyName: String, pushType: String, app: String, createdAt: Date, deliveries: [DeliveryRecord]
    ) {
        self.id = id
        self.keyName = keyName
        self.pushType = pushType
        self.app = app
        self.createdAt = createdAt
        self.deliveries = deliveries
    }
}

/// One device-send as the progress endpoint shows it.
package struct DeliveryRecord: Sendable, Hashable {
    package var token: String
    /// `queued`, `claimed` or `done`.
    package var state: String
    package var attempts: Int
    package var status: Int?
    package var reason: String?
    package var apnsID: String?
    package var errorKind: String?
    package var delivery: String?
    package var message: String?
    package var finishedAt: Date?

    package init(
        token: String, state: String, attempts: Int, status: Int? = nil, reason: String? = nil, apnsID: String? = nil,
        errorKind: String? = nil, delivery: String? = nil, message: String? = nil, finishedAt: Date? = nil
    ) {
        self.token = token
        self.state = state
        self.attempts = attempts
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.errorKind = errorKind
        self.delivery = delivery
        self.message = message
        self.finishedAt = finishedAt
    }
}

/// A token APNs answered 410 Unregistered for.
package struct UnregisteredToken: Sendable, Hashable {
    /// The entry's place in the order of reports: pass the last one seen as `since` to page on.
    package var cursor: Int64
    package var app: String
    package var token: String
    /// When APNs said the token stopped being valid (its `timestamp`), if it said.
    package var invalidSince: Date?
    /// When the gateway learned it.
    package var reportedAt: Date

    package init(cursor: Int64, app: String, token: String, invalidSince: Date? = nil, reportedAt: Date) {
        self.cursor = cursor
        self.app = app
        self.token = token
        self.invalidSince = invalidSince
        self.reportedAt = reportedAt
    }
}
