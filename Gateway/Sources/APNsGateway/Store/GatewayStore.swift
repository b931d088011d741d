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
package protocol GatewayStore: Sendable {
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
    /// queued again at once, the webhook messages its webhook sender held
    /// (``GatewayInstance/webhookOwner(name:incarnation:)``) released, and its registration removed.
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
    /// done, with their outcomes, up to `limit` unregistered-list entries reported before it, and
    /// up to `limit` webhook messages delivered or given up on before it; returns how many
    /// notifications. Called in small batches, so no write waits long.
    func deleteFinished(before cutoff: Date, limit: Int) async throws -> Int

    /// Cancels notification `id`: each of its device-sends still queued (not claimed, so never
    /// written to APNs) is finished as ``FailureKind/cancelled`` with `message`, in one
    /// transaction with its webhook events, and the notification is marked cancelled; returns how
    /// many. Device-sends already claimed finish with their own outcomes, but a claim read after
    /// the cancel says so (``ClaimedNotification/cancelled``), and its sender finishes them as
    /// cancelled instead of sending them.
    func cancel(notificationID id: String, message: String, now: Date) async throws -> Int
    /// A notification's progress and per-device outcomes.
    func progress(of id: String) async throws -> NotificationProgress?
    /// Tokens APNs answered 410 Unregistered for, for `apps`, reported after the entry `cursor`
    /// (0: from the start), in the order they were reported. A token reported again moves to the end.
    func unregistered(apps: Set<String>, after cursor: Int64, limit: Int) async throws -> [UnregisteredToken]
    /// Forgets reported tokens of `app` (the caller has removed them); returns how many.
    func acknowledgeUnregistered(app: String, tokens: [String]) async throws -> Int

    // Webhooks: the outbox. ``complete(_:owner:now:)`` adds each final outcome's events for its
    // app's endpoints in its own transaction, so no outcome is lost between the queue and them.

    /// Adds `endpoint`; false when its name is taken.
    func addWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool
    /// Every endpoint, by name, with how its events and messages stand.
    func webhookEndpoints() async throws -> [WebhookEndpointStatus]
    /// Removes the endpoint with its waiting events and its messages; false when there is none.
    func removeWebhookEndpoint(name: String) async throws -> Bool
    /// Gathers each endpoint's waiting events, oldest first, into messages of at most `batch`
    /// events each (the message keeps them; the events go); returns how many messages it made.
    func makeWebhookMessages(batch: Int, now: Date) async throws -> Int
    /// Messages due at `now`, neither delivered nor given up on, and not held under a live lease,
    /// oldest first: leased to `owner` until `leaseUntil`.
    func claimWebhookMessages(
        owner: String, limit: Int, now: Date, leaseUntil: Date
    ) async throws
        -> [WebhookMessage]
    /// How a try of message `id` ended; ignored when `owner` no longer holds it.
    func finishWebhookTry(id: String, owner: String, result: WebhookTry, now: Date) async throws
    /// Events not yet in a message, and messages neither delivered nor given up on, over every
    /// endpoint: the outbox's backlog, for its gauges.
    func webhookBacklog() async throws -> WebhookBacklog
}

extension GatewayStore {
    /// ``claim(owner:limit:now:leaseUntil:apps:)`` of every app.
    package func claim(owner: String, limit: Int, now: Date, leaseUntil: Date) async throws -> [ClaimedNotification] {
        try await claim(owner: owner, limit: limit, now: now, leaseUntil: leaseUntil, apps: .all)
    }

    /// ``enqueue(_:maximumQueueDepth:maximumAppDepth:)`` without a quota for the app.
    package func enqueue(_ notification: QueuedNotification, maximumQueueDepth: Int) async throws -> EnqueueResult {
        try await enqueue(notification, maximumQueueDepth: maximumQueueDepth, maximumAppDepth: nil)
    }
}
