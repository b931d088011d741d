import Foundation

/// Where the gateway keeps API keys, the queue of device-sends, their outcomes and the tokens APNs
/// reported unregistered. One protocol, two backends: ``SQLiteStore`` (one file, the default) and,
/// for several gateway instances on one database, PostgreSQL.
///
/// Every device-send is a row that moves `queued` → `claimed` (by one sender, until its lease
/// expires) → `done`; a sender that dies leaves its claims to expire, and another sender (or the
/// same one restarted) claims them again. A device-send is therefore sent at least once after it
/// was accepted, and more than once only if a sender stopped between sending and writing its
/// outcome.
///
/// Thread safety: implementations are `Sendable` and safe to call from any number of tasks.
public protocol GatewayStore: Sendable {
    /// Creates the schema or upgrades it through its numbered migrations; throws a ``StoreError``
    /// for a queue a newer gateway has upgraded. Safe to call on every start.
    func prepare() async throws

    /// Adds an API key (only its hash is stored).
    func addAPIKey(_ key: APIKey) async throws
    /// The key with this SHA-256 hash, if any.
    func apiKey(hash: String) async throws -> APIKey?
    /// Every key, by name.
    func apiKeys() async throws -> [APIKey]
    /// Removes the key called `name`; whether there was one. Running instances stop accepting it
    /// within their key cache's lifetime (5 s by default).
    func revokeAPIKey(name: String) async throws -> Bool

    /// Every credential, by name, with the apps bound to it.
    func credentials() async throws -> [StoredCredential]
    /// Stores `credential` and binds its ``StoredCredential/apps`` to it (an app bound to another
    /// credential moves; one bound to this one and left out is unbound), in one transaction: a new
    /// credential when `revision` is nil (false when the name is taken), else the rotation of the
    /// stored `revision` (false when the stored one is another: a rotation came in between).
    func saveCredential(_ credential: StoredCredential, replacing revision: Int?) async throws -> Bool
    /// Removes the credential called `name` and its apps' bindings; the apps that were bound, or
    /// nil when there is no such credential.
    func removeCredential(name: String) async throws -> [String]?
    /// Every app with settings of its own (a credential, limits), by app.
    func appSettings() async throws -> [AppSettings]
    /// Sets `app`'s limits (nil: none), keeping its credential.
    func setLimits(of app: String, maximumQueued: Int?, deviceSendsPerSecond: Double?) async throws

    /// Stores a notification and one queued device-send per device in one transaction, unless its
    /// devices would take the queue past `maximumQueueDepth` unfinished device-sends, or its app's
    /// past `maximumAppDepth`: then nothing is stored. A notification with an ``QueuedNotification/idempotency`` key its API key has
    /// used before (for a notification still kept) is not stored again: the answer names the
    /// first (``EnqueueResult/replayed(id:)``, or ``EnqueueResult/keyReused(id:)`` when the
    /// bodies differ), also when the two requests race.
    func enqueue(
        _ notification: QueuedNotification, maximumQueueDepth: Int, maximumAppDepth: Int?
    ) async throws -> EnqueueResult
    /// Unfinished device-sends (queued or claimed), kept as the queue changes: reading it costs
    /// the same whatever the backlog.
    func queueDepth() async throws -> Int
    /// `app`'s unfinished device-sends, kept as ``queueDepth()`` is.
    func queueDepth(of app: String) async throws -> Int
    /// Takes `devices` from `app`'s ``DeviceSendBudget`` of `rate` device-sends a second at `now`,
    /// one budget shared by every instance on this queue, atomically; nil when taken, or the
    /// seconds until the budget is out of debt (nothing taken).
    func takeDeviceSends(app: String, devices: Int, rate: Double, now: Date) async throws -> Double?
    /// Returns what ``takeDeviceSends(app:devices:rate:now:)`` took for a request that queued
    /// nothing.
    func returnDeviceSends(app: String, devices: Int, rate: Double) async throws

    /// Claims up to `limit` device-sends that are due (queued and available, or claimed under an
    /// expired lease) for `owner` until `leaseUntil`, taking turns between apps: each app with due
    /// work gets an equal share of `limit` (what an app leaves of its share goes to the others),
    /// its longest due first, so one app's backlog delays another's new notification by one claim
    /// at most. Its cost does not grow with the rows not due (waiting out a back-off or a pause),
    /// however many; it grows with the apps that have work.
    ///
    /// Only the apps `apps` admits take part (those of a credential whose sending is paused are
    /// left out), their device-sends under an expired lease included.
    func claim(
        owner: String, limit: Int, now: Date, leaseUntil: Date, apps: AppFilter
    ) async throws -> [ClaimedNotification]
    /// Registers a starting sender under its name, in one transaction: refused while a live sender
    /// holds the name (``InstanceRegistration/nameInUse(host:processID:lastHeartbeat:)``); every
    /// dead sender's claims (its heartbeat older than `staleAfter`, or its process gone from this
    /// host, ``GatewayInstance/isDead(host:processID:lastHeartbeat:now:staleAfter:thisHost:)``, or
    /// an earlier start of this one,
    /// ``GatewayInstance/isEarlierStart(host:processID:incarnation:lastHeartbeat:now:)``) are
    /// queued again at once and its registration removed.
    func register(_ instance: GatewayInstance, now: Date, staleAfter: Duration) async throws -> InstanceRegistration
    /// The sender is alive: records its heartbeat and renews the lease of every device-send it
    /// holds until `leaseUntil`, in one transaction. False when its registration is gone (another
    /// process took the name over, judging it dead): it must stop sending what it holds.
    func heartbeat(_ instance: GatewayInstance, now: Date, leaseUntil: Date) async throws -> Bool
    /// Removes the sender's registration (a graceful stop).
    func unregister(_ instance: GatewayInstance) async throws
    /// Records, durably, that these claimed device-sends of one notification may be written to APNs
    /// from now on (an at-most-once notification's, before they are); returns how many were still
    /// held by `owner`. A later claim of one reports ``ClaimedDelivery/mayHaveBeenSent``; an outcome
    /// that queues it again (provably not sent) clears the record.
    func markStarted(notificationID: String, positions: [Int], owner: String, now: Date) async throws -> Int

    /// Writes outcomes of device-sends `owner` claimed, in one transaction: each is done, or, when
    /// ``DeliveryOutcome/retryAt`` is set, queued again for then. Outcomes of claims `owner` no
    /// longer holds are ignored (another sender took them over) and not counted.
    func complete(_ outcomes: [DeliveryOutcome], owner: String, now: Date) async throws -> Int

    /// Deletes up to `limit` notifications created before `cutoff` whose device-sends are all
    /// done, with their outcomes, and up to `limit` unregistered-list entries reported before it;
    /// returns how many notifications. Called in small batches, so no write waits long.
    func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int

    /// A notification's progress and per-device outcomes.
    func progress(of id: String) async throws -> NotificationProgress?
    /// Tokens APNs answered 410 Unregistered for, for `apps`, reported after the entry `cursor`
    /// (0: from the start), in the order they were reported. A token reported again moves to the end.
    func unregistered(apps: Set<String>, after cursor: Int64, limit: Int) async throws -> [UnregisteredToken]
    /// Forgets reported tokens of `app` (the caller has removed them); returns how many.
    func acknowledgeUnregistered(app: String, tokens: [String]) async throws -> Int
}

/// Each app's device-sends a second (``AppSettings/deviceSendsPerSecond``), kept in the queue so
/// that every instance on it shares one budget: a bucket of one second's worth that a request may
/// overdraw, so that a request of more devices than a second allows is accepted when the bucket
/// is not in debt, and the next waits until the debt is paid back. On average `rate` a second, and
/// never a request refused for being larger than the rate.
///
/// Each store keeps the bucket as a row of `app_rates` (`tokens` left at `at`, seconds since
/// 1970) and refills and takes from it atomically (its `takeDeviceSends`; SQLite in one write
/// transaction, PostgreSQL in one statement that spells ``refilled(tokens:at:now:rate:)`` in SQL):
/// a request is taken when the refilled tokens are above zero, from a full bucket when the app
/// has no row yet. Instances' clocks may differ a little: time before `at` refills nothing, and
/// `at` never goes back. On PostgreSQL the table is unlogged (no write-ahead log, so no flush per
/// request): after a crash, or on a standby, every app starts from a full bucket.
public enum DeviceSendBudget {
    /// The tokens a bucket holds at `now`: what it held at `at` plus `rate` a second since, at
    /// most one second's worth.
    public static func refilled(tokens: Double, at: Double, now: Double, rate: Double) -> Double {
        min(rate, tokens + max(0, now - at) * rate)
    }

    /// The seconds a bucket holding `tokens` (zero or less: in debt) needs to hold one again.
    public static func wait(tokens: Double, rate: Double) -> Double { max(0, (1 - tokens) / rate) }
}

/// Which apps a claim may take device-sends of.
public struct AppFilter: Sendable {
    /// Whether the app's device-sends may be claimed.
    public let admits: @Sendable (String) -> Bool

    public init(_ admits: @escaping @Sendable (String) -> Bool) { self.admits = admits }

    /// Every app.
    public static let all = AppFilter { _ in true }
}

extension GatewayStore {
    /// ``claim(owner:limit:now:leaseUntil:apps:)`` of every app.
    public func claim(owner: String, limit: Int, now: Date, leaseUntil: Date) async throws -> [ClaimedNotification] {
        try await claim(owner: owner, limit: limit, now: now, leaseUntil: leaseUntil, apps: .all)
    }

    /// ``enqueue(_:maximumQueueDepth:maximumAppDepth:)`` without a quota for the app.
    public func enqueue(_ notification: QueuedNotification, maximumQueueDepth: Int) async throws -> EnqueueResult {
        try await enqueue(notification, maximumQueueDepth: maximumQueueDepth, maximumAppDepth: nil)
    }
}

/// An app's own settings: the credential it is bound to and its limits (nil: none).
public struct AppSettings: Sendable, Hashable {
    /// The bundle id (or MDM topic).
    public var app: String
    /// The stored credential that serves it; nil for the gateway's credential flags.
    public var credential: String?
    /// Unfinished device-sends it may have in the queue; a request past it is refused (429).
    public var maximumQueued: Int?
    /// Device-sends a second it may have accepted, on average, by every instance on the queue
    /// together (``DeviceSendBudget``).
    public var deviceSendsPerSecond: Double?

    public init(app: String, credential: String? = nil, maximumQueued: Int? = nil, deviceSendsPerSecond: Double? = nil)
    {
        self.app = app
        self.credential = credential
        self.maximumQueued = maximumQueued
        self.deviceSendsPerSecond = deviceSendsPerSecond
    }
}

/// A running sender (one gateway process), as registered in the store.
public struct GatewayInstance: Sendable, Hashable {
    /// Its name in claims (`lease_owner`).
    public var name: String
    /// The host it runs on, and its process id there: a process gone from this host is dead
    /// whatever its last heartbeat says.
    public var host: String
    public var processID: Int32
    /// This start of the process (a random id): a registration of the same name by an earlier
    /// process is not this one's.
    public var incarnation: String
    /// How often it records its heartbeat (``Dispatcher/Configuration/heartbeat``).
    public var heartbeat: Duration

    public init(
        name: String, host: String = ProcessInfo.processInfo.hostName,
        processID: Int32 = ProcessInfo.processInfo.processIdentifier, incarnation: String = UUID().uuidString,
        heartbeat: Duration = .seconds(1)
    ) {
        self.name = name
        self.host = host
        self.processID = processID
        self.incarnation = incarnation
        self.heartbeat = heartbeat
    }

    /// Whether a registration of this instance's name, made from this host under this process's
    /// own id by another start, is that of an earlier start that has died: its heartbeat is older
    /// than three of this one's.
    ///
    /// A container restarted after a crash runs the gateway as PID 1 again, under the same
    /// hostname, so under the same default name, and `kill` finds this very process under the
    /// registered id: whether the earlier start lives cannot be asked of the system. Within one
    /// process namespace it is surely dead (a process id belongs to one process at a time); from
    /// another namespace, the one live process it could be is a second container given the same
    /// hostname and name, which the name's rule already forbids. A live sender records its
    /// heartbeat every ``heartbeat``; three missed is a stop, not a delay.
    public func isEarlierStart(
        host: String, processID: Int32, incarnation: String, lastHeartbeat: Date, now: Date
    ) -> Bool {
        host == self.host && processID == self.processID && incarnation != self.incarnation
            && now.timeIntervalSince(lastHeartbeat) > (heartbeat * 3).seconds
    }

    /// Whether a registration by `host` and `processID` names this process: an earlier start of it
    /// (``isEarlierStart(host:processID:incarnation:lastHeartbeat:now:)`` once its heartbeats stop).
    public func sharesProcessID(host: String, processID: Int32) -> Bool {
        host == self.host && processID == self.processID
    }

    /// Whether a registered sender is dead: no heartbeat for `staleAfter`, or registered from this
    /// host by a process that no longer exists.
    public static func isDead(
        host: String, processID: Int32, lastHeartbeat: Date, now: Date, staleAfter: Duration,
        thisHost: String = ProcessInfo.processInfo.hostName
    ) -> Bool {
        if now.timeIntervalSince(lastHeartbeat) > staleAfter.seconds { return true }
        guard host == thisHost, processID > 0 else { return false }
        return kill(processID, 0) != 0 && errno == ESRCH
    }
}

/// What ``GatewayStore/register(_:now:staleAfter:)`` did.
public enum InstanceRegistration: Sendable, Equatable {
    /// Registered; `releasedClaims` device-sends dead senders held were queued again.
    case registered(releasedClaims: Int)
    /// A live sender holds the name.
    case nameInUse(host: String, processID: Int32, lastHeartbeat: Date)
}

/// An API key as stored: a name, the SHA-256 of the secret, the apps it may send to, and its rate.
public struct APIKey: Sendable, Hashable {
    /// A name for logs and metrics (never the secret).
    public var name: String
    /// Lower-case hex SHA-256 of the secret.
    public var hash: String
    /// Bundle ids (MDM topics for mdm) the key may send to.
    public var apps: Set<String>
    /// Requests per second allowed (a token bucket with this rate and a burst of twice it).
    public var requestsPerSecond: Double

    public init(name: String, hash: String, apps: Set<String>, requestsPerSecond: Double) {
        self.name = name
        self.hash = hash
        self.apps = apps
        self.requestsPerSecond = requestsPerSecond
    }
}

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
