import Foundation

// What the store keeps of the queue: notifications as accepted, device-sends as claimed, their
// outcomes as written, progress as read, and the tokens APNs reported unregistered.

/// A notification accepted for queueing.
public struct QueuedNotification: Sendable {
    public var id: String
    public var keyName: String
    public var pushType: String
    public var app: String
    /// ``NotificationRequest/storedJSON``.
    public var storedJSON: String
    /// Device tokens, lower-case hex, in request order (their position is their index).
    public var tokens: [String]
    public var createdAt: Date
    /// The request's `Idempotency-Key`, when it gave one.
    public var idempotency: Idempotency?

    public init(
        id: String, keyName: String, pushType: String, app: String, storedJSON: String, tokens: [String],
        createdAt: Date, idempotency: Idempotency? = nil
    ) {
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
public struct Idempotency: Sendable, Hashable {
    /// The caller's key, unique among its API key's requests.
    public var key: String
    /// Lower-case hex SHA-256 of the request body.
    public var fingerprint: String

    public init(key: String, fingerprint: String) {
        self.key = key
        self.fingerprint = fingerprint
    }
}

/// What ``GatewayStore/enqueue(_:maximumQueueDepth:)`` did.
public enum EnqueueResult: Sendable, Equatable {
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
public struct ClaimedNotification: Sendable {
    public var id: String
    public var storedJSON: String
    public var deliveries: [ClaimedDelivery]
    /// When it was accepted (a notification without an expiration of its own is sent for
    /// ``Dispatcher/Configuration/maximumAge`` from then).
    public var createdAt: Date

    public init(id: String, storedJSON: String, deliveries: [ClaimedDelivery], createdAt: Date) {
        self.id = id
        self.storedJSON = storedJSON
        self.deliveries = deliveries
        self.createdAt = createdAt
    }
}

/// One claimed device-send.
public struct ClaimedDelivery: Sendable, Hashable {
    public var position: Int
    public var token: String
    /// Attempts before this one.
    public var attempts: Int
    /// Whether an earlier holder recorded it as started (``GatewayStore/markStarted(notificationID:positions:owner:now:)``)
    /// and left no outcome: it may have reached APNs.
    public var mayHaveBeenSent: Bool

    public init(position: Int, token: String, attempts: Int, mayHaveBeenSent: Bool = false) {
        self.position = position
        self.token = token
        self.attempts = attempts
        self.mayHaveBeenSent = mayHaveBeenSent
    }
}

/// The outcome of one device-send, as written back.
public struct DeliveryOutcome: Sendable, Hashable {
    public var notificationID: String
    public var position: Int
    public var token: String
    public var app: String
    /// APNs' status, when it answered.
    public var status: Int?
    /// APNs' reason for a rejection.
    public var reason: String?
    /// APNs' apns-id (its own when the request carried none).
    public var apnsID: String?
    /// For 410 Unregistered: when the token stopped being valid.
    public var invalidSince: Date?
    /// For a failure without an answer: the kind (timeout, connection, …).
    public var errorKind: String?
    /// For a failure without an answer: `not-sent` or `unknown`.
    public var delivery: String?
    /// A readable description of the failure.
    public var message: String?
    /// Set to queue the device-send again (a failure that was provably not sent), instead of done.
    public var retryAt: Date?
    /// Whether this try counts among the device-send's attempts: false when it was queued again
    /// for a cause outside it (sending paused, the sender stopping), which spends none.
    public var countsAsAttempt: Bool

    public init(
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
public struct NotificationProgress: Sendable, Hashable {
    public var id: String
    public var keyName: String
    public var pushType: String
    public var app: String
    public var createdAt: Date
    public var deliveries: [DeliveryRecord]

    public init(
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
public struct DeliveryRecord: Sendable, Hashable {
    public var token: String
    /// `queued`, `claimed` or `done`.
    public var state: String
    public var attempts: Int
    public var status: Int?
    public var reason: String?
    public var apnsID: String?
    public var errorKind: String?
    public var delivery: String?
    public var message: String?
    public var finishedAt: Date?

    public init(
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
public struct UnregisteredToken: Sendable, Hashable {
    /// The entry's place in the order of reports: pass the last one seen as `since` to page on.
    public var cursor: Int64
    public var app: String
    public var token: String
    /// When APNs said the token stopped being valid (its `timestamp`), if it said.
    public var invalidSince: Date?
    /// When the gateway learned it.
    public var reportedAt: Date

    public init(cursor: Int64, app: String, token: String, invalidSince: Date? = nil, reportedAt: Date) {
        self.cursor = cursor
        self.app = app
        self.token = token
        self.invalidSince = invalidSince
        self.reportedAt = reportedAt
    }
}
