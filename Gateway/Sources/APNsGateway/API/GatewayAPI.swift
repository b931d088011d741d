@_spi(Description) import APNs
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import Synchronization
import Tracing

/// The gateway's HTTP API (`openapi.yaml` describes it):
///
/// - `POST /v1/notifications`: checks the notification with the library's rules and queues one
///   device-send per device, durably, before answering 202 with the notification's id.
/// - `POST /v1/notification-batches`: several notifications, each accepted or refused on its own.
/// - `GET /v1/notifications/{id}`: progress and per-device outcomes; `DELETE` cancels what has not
///   been sent.
/// - `GET /v1/unregistered?since=…` and `DELETE /v1/unregistered`: tokens APNs answered 410 for.
/// - `GET /healthz`, `GET /readyz`, `GET /metrics`.
///
/// Every `/v1` route needs `Authorization: Bearer <key>`; a key sends only to its apps, at its
/// rate. Every error is `application/problem+json` that names the rule (``ProblemMiddleware``).
///
/// Thread safety: `Sendable`; the router it builds serves requests concurrently.
public struct GatewayAPI: Sendable {
    /// Limits of the API.
    public struct Configuration: Sendable {
        /// Devices in one `POST /v1/notifications`.
        public var maximumDevicesPerRequest = 5_000
        /// Bytes of one request body.
        public var maximumBodyBytes = 1 << 20
        /// Notifications in one `POST /v1/notification-batches` (their devices together at most
        /// ``maximumDevicesPerRequest``).
        public var maximumBatchItems = 100
        /// The longest `?wait=` of a one-device `POST /v1/notifications` for its outcome.
        public var maximumWait: Duration = .seconds(30)
        /// How often such a wait reads the notification's progress: short, so that the answer
        /// follows the outcome closely; a read is one indexed query, so a waiting request costs the
        /// database little.
        public var waitPollInterval: Duration = .milliseconds(25)
        /// Unfinished device-sends above which `POST` answers 503 with `Retry-After`.
        public var maximumQueueDepth = 1_000_000
        /// The `Retry-After` of that 503, in seconds.
        public var queueFullRetryAfter = 5
        /// The `Retry-After` of a 503 when the queue's database is unavailable, in seconds.
        public var databaseRetryAfter = 2
        /// Look-ups of API keys the store does not know, a second (bursts of twice it), for each
        /// caller's address: past it, that caller's requests with a key not remembered are a 429
        /// without reaching the database, while other callers' keys are looked up as before.
        /// Known keys do not spend it.
        public var unknownKeysPerSecond: Double = 50
        /// How long a key looked up in the store is remembered.
        public var keyCacheLifetime: Duration = .seconds(5)
        /// Where one line per request goes (``AccessLogMiddleware``): method, path, status,
        /// duration, caller and API key name, never a secret; nil for none.
        public var accessLogger: Logger?
        /// The time the API decides by (``GatewayClock``): when a notification was accepted, the
        /// keys' and apps' rate buckets, how long keys and app settings are remembered. The
        /// system's, unless a test gives one it advances itself.
        public var clock: any GatewayClock = SystemGatewayClock()

        public init() {}

        /// A body limit with room for `devices` tokens (64 hex digits, quoted, and a comma: 70
        /// bytes each, with room to spare) and the notification's other fields: at least 1 MiB.
        public static func bodyBytes(forDevices devices: Int) -> Int {
            max(1 << 20, min(max(devices, 0), 10_000_000) * 70 + (64 << 10))
        }
    }

    let store: any GatewayStore
    let configuration: Configuration
    /// What serves each app: its credential's authentication (what push types it can send) and
    /// environments; nil for an app no credential serves.
    let credentials: @Sendable (String) -> CredentialPolicy?
    /// Called after a notification is stored (wakes the dispatcher).
    let onAccepted: @Sendable () -> Void
    /// `GET /metrics`' text, when metrics are served.
    let metricsText: (@Sendable () -> String)?
    /// Whether the dispatcher sends, for `GET /readyz`, when one runs in this process.
    let sendingStatus: (@Sendable () -> SendingStatus)?
    private let keys: KeyCache
    private let limiter = RateLimiter()
    /// Each app's settings as read at most ``Configuration/keyCacheLifetime`` ago.
    private let apps: AppSettingsCache
    private let metricsFactory: any MetricsFactory
    /// Notifications accepted, by app.
    private let accepted: AppCounters
    private let replayed: Counter
    /// Device-sends cancelled before they were sent, by app.
    private let cancellations: AppCounters

    /// The API an application that embeds the gateway serves (``router()``): it accepts for the
    /// apps `connectors` serves, reports `dispatcher`'s state on its readiness probe, and wakes it
    /// for each notification it accepts. `metricsText` answers `GET /metrics` (the Prometheus text
    /// of the embedder's registry); nil answers it with 404.
    public init(
        database: GatewayDatabase, configuration: Configuration = .init(), connectors: CredentialConnectors,
        dispatcher: Dispatcher, metricsText: (@Sendable () -> String)? = nil,
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.init(
            store: database.store, configuration: configuration, credentials: { connectors.policy(for: $0) },
            metricsText: metricsText, sendingStatus: { dispatcher.status }, metricsFactory: metricsFactory,
            onAccepted: { dispatcher.wake() })
    }

    /// An API whose every app is served by one credential authenticating with `authenticationMethod`,
    /// in either environment.
    package init(
        store: any GatewayStore, configuration: Configuration = .init(), authenticationMethod: AuthenticationMethod,
        metricsText: (@Sendable () -> String)? = nil, sendingStatus: (@Sendable () -> SendingStatus)? = nil,
        metricsFactory: any MetricsFactory = MetricsSystem.factory, onAccepted: @escaping @Sendable () -> Void = {}
    ) {
        let policy = CredentialPolicy(
            credential: "default", authenticationMethod: authenticationMethod, environments: [.sandbox, .production])
        self.init(
            store: store, configuration: configuration, credentials: { _ in policy }, metricsText: metricsText,
            sendingStatus: sendingStatus, metricsFactory: metricsFactory, onAccepted: onAccepted)
    }

    /// - Parameters:
    ///   - credentials: What serves an app (``CredentialConnectors/policy(for:)``); a notification
    ///     for an app it answers nil for is refused.
    package init(
        store: any GatewayStore, configuration: Configuration = .init(),
        credentials: @escaping @Sendable (String) -> CredentialPolicy?,
        metricsText: (@Sendable () -> String)? = nil, sendingStatus: (@Sendable () -> SendingStatus)? = nil,
        metricsFactory: any MetricsFactory = MetricsSystem.factory, onAccepted: @escaping @Sendable () -> Void = {}
    ) {
        self.metricsFactory = metricsFactory
        accepted = AppCounters(label: "apns_gateway_notifications_accepted_total", factory: metricsFactory)
        replayed = Counter(label: "apns_gateway_notifications_replayed_total", factory: metricsFactory)
        cancellations = AppCounters(label: "apns_gateway_device_sends_cancelled_total", factory: metricsFactory)
        self.store = store
        self.configuration = configuration
        self.credentials = credentials
        self.metricsText = metricsText
        self.sendingStatus = sendingStatus
        self.onAccepted = onAccepted
        keys = KeyCache(lifetime: configuration.keyCacheLifetime, unknownPerSecond: configuration.unknownKeysPerSecond)
        apps = AppSettingsCache(lifetime: configuration.keyCacheLifetime)
    }

    /// The SHA-256 of an API key, lower-case hex: what the store keeps instead of the key.
    package static func hash(apiKey: String) -> String {
        hex(SHA256.hash(data: Array(apiKey.utf8)))
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    static let idempotencyKeyField = HTTPField.Name("Idempotency-Key")!
    /// Says that a `POST` answer is the one an earlier request with the same `Idempotency-Key` got.
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!

    /// The request's `Idempotency-Key`, if it has one: a Structured Fields string (RFC 8941,
    /// `"…"`), as the IETF draft defines the header, or the same characters unquoted, as many
    /// clients send a UUID; 1 to 255 printable ASCII characters.
    static func idempotencyKey(_ headers: HTTPFields) throws -> String? {
        let values = headers[values: idempotencyKeyField]
        guard let value = values.first else { return nil }
        let refusal = Problem(
            .badRequest,
            #"the Idempotency-Key header is not one key: give Idempotency-Key: "<1 to 255 printable ASCII characters>", a new one for each notification"#,
            field: "Idempotency-Key")
        guard values.count == 1 else { throw refusal }
        var key = ""
        let text = value.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("\"") {
            // An sf-string: printable ASCII; a backslash escapes only a quote or a backslash.
            var characters = text.unicodeScalars.dropFirst()[...]
            var closed = false
            while let character = characters.popFirst() {
                if character == "\"" {
                    closed = true
                    break
                }
                if character == "\\" {
                    guard let next = characters.popFirst(), next == "\"" || next == "\\" else { throw refusal }
                    key.unicodeScalars.append(next)
                } else {
                    guard (0x20...0x7E).contains(character.value) else { throw refusal }
                    key.unicodeScalars.append(character)
                }
            }
            guard closed, characters.isEmpty else { throw refusal }
        } else {
            guard text.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) && $0 != "\"" }) else {
                throw refusal
            }
            key = text
        }
        guard (1...255).contains(key.utf8.count) else { throw refusal }
        return key
    }

    /// A new random API key (32 bytes, hex): give it to the caller once, store its ``hash(apiKey:)``.
    package static func makeAPIKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return "agk_"
            + (0..<32).map { _ in
                let byte = UInt8.random(in: 0...255, using: &generator)
                return byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
            }.joined()
    }

    /// The routes.
    public func router() -> Router<GatewayRequestContext> {
        let router = Router(context: GatewayRequestContext.self)
        // First of all, so that it sees every answer's status.
        if let accessLogger = configuration.accessLogger {
            router.add(middleware: AccessLogMiddleware(logger: accessLogger, clock: configuration.clock))
        }
        // A server span per request, a child of the caller's `traceparent` (a no-op unless a tracer
        // is bootstrapped): a notification keeps its context for its sends (``TraceParent``).
        router.add(middleware: TracingMiddleware())
        // First, so that it wraps every route and the answer for an unknown path.
        router.add(
            middleware: ProblemMiddleware(retryAfter: configuration.databaseRetryAfter, metricsFactory: metricsFactory))
        router.post("/v1/notifications") { request, context in
            try await self.accept(request, context: context)
        }
        router.get("/v1/notifications/:id") { request, context in
            try await self.progress(request, context: context)
        }
        router.delete("/v1/notifications/:id") { request, context in
            try await self.cancel(request, context: context)
        }
        router.post("/v1/notification-batches") { request, context in
            try await self.acceptBatch(request, context: context)
        }
        router.get("/v1/unregistered") { request, context in
            try await self.unregistered(request, context: context)
        }
        router.delete("/v1/unregistered") { request, context in
            try await self.acknowledge(request, context: context)
        }
        router.get("/healthz") { _, _ in jsonResponse(.ok, .object(["status": .string("ok")])) }
        // Ready while the queue's database answers: the API accepts notifications then, also while
        // sending is paused for a cause upstream (the queue is what rides the outage out), which
        // the answer says.
        router.get("/readyz") { _, _ in
            let depth: Int
            do {
                depth = try await self.store.queueDepth()
            } catch {
                throw Problem(
                    .serviceUnavailable, "the queue's database cannot be read: \(DatabaseFailure(error))",
                    retryAfter: self.configuration.databaseRetryAfter)
            }
            var members: [String: JSONValue] = ["status": .string("ready"), "queue-depth": .integer(Int64(depth))]
            switch self.sendingStatus?() {
            case .paused(let cause, let probeIn)?:
                members["sending"] = .string("paused")
                members["paused-because"] = .string(cause.rawValue)
                members["probe-in-ms"] = .integer(Int64((probeIn.seconds * 1000).rounded(.up)))
            case .sending?:
                members["sending"] = .string("sending")
            case nil:
                break
            }
            return jsonResponse(.ok, .object(members))
        }
        var served: [String: [HTTPRequest.Method]] = [
            "/v1/notifications": [.post], "/v1/notifications/:id": [.get, .delete],
            "/v1/notification-batches": [.post], "/v1/unregistered": [.get, .delete],
            "/healthz": [.get], "/readyz": [.get],
        ]
        if let metricsText {
            router.get("/metrics") { _, _ in
                Response(
                    status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                    body: .init(byteBuffer: ByteBuffer(string: metricsText())))
            }
            served["/metrics"] = [.get]
        }
        // Another method on a known path is 405 with Allow, not 404.
        var methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options, .trace, .connect]
        if let query = HTTPRequest.Method("QUERY") { methods.append(query) }
        for (path, allowed) in served {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in methods where !allowed.contains(method) && !(method == .head && allowed.contains(.get)) {
                router.on(RouterPath(path), method: method) { _, _ -> Response in
                    throw Problem(.methodNotAllowed, "\(path) answers \(allow) only", allow: allow)
                }
            }
        }
        return router
    }

    // MARK: Routes

    private func accept(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try await authenticate(request, caller: context.caller)
        let idempotencyKey = try Self.idempotencyKey(request.headers)
        let wait = try Self.wait(request.uri.queryParameters["wait"].map(String.init), limit: configuration.maximumWait)
        let body = try await readBody(request)
        let queued = try await queue(
            body: body, key: key,
            idempotency: idempotencyKey.map { Idempotency(key: $0, fingerprint: Self.hex(SHA256.hash(data: body))) },
            maximumDevices: configuration.maximumDevicesPerRequest, waiting: wait != nil)
        var headers: HTTPFields = [.location: "/v1/notifications/\(queued.id)"]
        if queued.replayed { headers[Self.idempotentReplayed] = "true" }
        if let wait, let finished = try await finished(queued.id, within: wait) {
            return jsonResponse(.ok, .object(finished), headers: headers)
        }
        return jsonResponse(.accepted, .object(queued.answer), headers: headers)
    }

    /// What ``queue(body:key:idempotency:maximumDevices:waiting:)`` stored, or found stored.
    struct Queued {
        var id: String
        /// Stored by an earlier request with the same idempotency key and body.
        var replayed: Bool
        /// The 202's body.
        var answer: [String: JSONValue]
    }

    /// Checks one notification `body` for `key` and queues it: the notification's id, or a
    /// ``Problem`` that says why nothing was queued (a database's error as it is).
    private func queue(
        body: [UInt8], key: APIKey, idempotency: Idempotency?, maximumDevices: Int, waiting: Bool
    ) async throws -> Queued {
        let notification: NotificationRequest
        do throws(RequestProblem) {
            notification = try NotificationRequest(
                body: body, maximumDevices: maximumDevices, now: configuration.clock.now)
        } catch {
            throw Problem(error)
        }
        let appField = notification.pushType == .mdm ? "topic" : "bundle-id"
        guard key.apps.contains(notification.app) else {
            throw Problem(
                .forbidden,
                "the key \(key.name) may not send to \(notification.app); it may send to \(key.apps.sorted().joined(separator: ", "))",
                field: appField)
        }
        guard let policy = credentials(notification.app) else {
            throw Problem(
                .forbidden,
                "no APNs credential serves \(notification.app) in this gateway; its operator binds one with `apns-gateway credential add --app \(notification.app) …`",
                field: appField)
        }
        do throws(RequestProblem) {
            try notification.check(for: policy)
        } catch {
            throw Problem(error)
        }
        if waiting, notification.targets.count != 1 {
            throw Problem(
                .unprocessableContent,
                "wait answers for one device; this request has \(notification.targets.count) targets: leave wait out and follow GET /v1/notifications/{id}, or send one device per request",
                field: "wait")
        }
        let id = UUID().uuidString.lowercased()
        let queued = QueuedNotification(
            id: id, keyName: key.name, pushType: notification.pushType.rawValue, app: notification.app,
            storedJSON: notification.storedJSON,
            tokens: notification.targets, createdAt: configuration.clock.now, availableAt: notification.sendAt,
            idempotency: idempotency, traceParent: TraceParent.of(ServiceContext.current))
        guard queued.tokens.count <= configuration.maximumQueueDepth else {
            throw Problem(
                .contentTooLarge,
                "\(queued.tokens.count) devices are more than the whole queue holds (\(configuration.maximumQueueDepth) device-sends); split the request",
                field: "devices")
        }
        // The answer to this body, also when a request before it with the same key and body
        // stored the notification: what it says is read from the body, which is the same.
        func acceptedAnswer(id: String, replayed: Bool) -> Queued {
            var members: [String: JSONValue] =
                notification.channel.map { ["id": .string(id), "channel": .string($0.id)] }
                ?? ["id": .string(id), "devices": .integer(Int64(queued.tokens.count))]
            if let sendAt = notification.sendAt {
                members["send-at"] = .integer(Int64((sendAt.timeIntervalSince1970 * 1000).rounded()))
            }
            return Queued(id: id, replayed: replayed, answer: members)
        }
        let limits = try await apps.settings(of: notification.app, store: store, now: configuration.clock.now)
        // The rate whose budget (shared by every instance on the queue) gave this request's devices.
        var takenAt: Double?
        if let rate = limits?.deviceSendsPerSecond {
            // A rate of zero, which the command does not store, admits nothing.
            let wait =
                rate > 0
                ? try await store.takeDeviceSends(
                    app: notification.app, devices: queued.tokens.count, rate: rate, now: configuration.clock.now)
                : 1
            if let wait {
                // Capped so that the wait of a tiny rate is still a number of seconds to say.
                let seconds = max(1, Int(min(wait, 86_400).rounded(.up)))
                throw Problem(
                    .tooManyRequests,
                    "\(notification.app) may have \(rate) device-sends a second accepted, and its recent requests used them up: try again in \(seconds) s, or send fewer devices at a time",
                    retryAfter: seconds)
            }
            takenAt = rate
        }
        // What the budget gave for a request that queued nothing goes back to it; a failure to give
        // it back only delays the app's next request, so it does not replace the answer.
        func giveBack() async {
            guard let rate = takenAt else { return }
            try? await store.returnDeviceSends(app: notification.app, devices: queued.tokens.count, rate: rate)
        }
        let result: EnqueueResult
        do {
            result = try await store.enqueue(
                queued, maximumQueueDepth: configuration.maximumQueueDepth, maximumAppDepth: limits?.maximumQueued)
        } catch {
            await giveBack()
            throw error
        }
        if result != .accepted { await giveBack() }
        switch result {
        case .accepted:
            accepted.increment(app: notification.app)
            onAccepted()
            return acceptedAnswer(id: id, replayed: false)
        case .replayed(let first):
            replayed.increment()
            return acceptedAnswer(id: first, replayed: true)
        case .keyReused(let first):
            throw Problem(
                .unprocessableContent,
                "the Idempotency-Key was given before with another body (notification \(first)); a new notification needs a new key, a retry the same body",
                field: "Idempotency-Key")
        case .queueFull(let depth):
            throw Problem(
                .serviceUnavailable,
                "the queue holds \(depth) unfinished device-sends and these \(queued.tokens.count) would take it past its limit (\(configuration.maximumQueueDepth)); nothing was queued, try again later",
                retryAfter: configuration.queueFullRetryAfter)
        case .appQuotaFull(let depth, let quota):
            throw Problem(
                .tooManyRequests,
                "\(notification.app) has \(depth) unfinished device-sends and these \(queued.tokens.count) would take it past its quota (\(quota)); nothing was queued, try again once some are sent",
                retryAfter: configuration.queueFullRetryAfter)
        }
    }

    /// `?wait=SECONDS`: how long a `POST` of one device waits for its outcome (1 to `limit`).
    static func wait(_ text: String?, limit: Duration) throws -> Duration? {
        guard let text else { return nil }
        let most = Int(limit.seconds)
        guard let seconds = Int(text), (1...most).contains(seconds) else {
            throw Problem(
                .badRequest, "wait is \(text); give whole seconds from 1 to \(most), or leave it out for a 202 at once",
                field: "wait")
        }
        return .seconds(seconds)
    }

    /// The progress document of notification `id` once every device-send of it is finished, or
    /// nil when `wait` ends first. The store is read every ``Configuration/waitPollInterval``: the
    /// instance that sends it may be another one on the same database, so no signal in this
    /// process would say it is done.
    private func finished(_ id: String, within wait: Duration) async throws -> [String: JSONValue]? {
        let clock = configuration.clock
        let deadline = clock.now + wait
        while true {
            if let progress = try await store.progress(of: id), progress.deliveries.allSatisfy({ $0.state == "done" }) {
                return Self.document(of: progress)
            }
            guard clock.now < deadline else { return nil }
            try await clock.sleep(for: configuration.waitPollInterval)
        }
    }

    /// `POST /v1/notification-batches`: several notifications in one request, each checked and
    /// queued on its own (one's refusal queues the others), with one `Idempotency-Key` for the
    /// request: each item is stored under the key and its index, so a retry of the same batch
    /// queues again only the items that were refused.
    private func acceptBatch(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try await authenticate(request, caller: context.caller)
        let idempotencyKey = try Self.idempotencyKey(request.headers)
        let body = try await readBody(request)
        let items = try Self.batchItems(body, maximumItems: configuration.maximumBatchItems)
        var devices = 0
        for case .object(let fields) in items {
            if case .array(let tokens)? = fields["devices"] { devices += tokens.count } else { devices += 1 }
        }
        guard devices <= configuration.maximumDevicesPerRequest else {
            throw Problem(
                .contentTooLarge,
                "the batch has \(devices) devices in all; at most \(configuration.maximumDevicesPerRequest) go in one request: split it",
                field: "notifications")
        }
        let refusals = ProblemMiddleware(retryAfter: configuration.databaseRetryAfter, metricsFactory: metricsFactory)
        var results: [JSONValue] = []
        for (index, item) in items.enumerated() {
            let bytes = Array(item.compactText.utf8)
            do {
                let queued = try await queue(
                    body: bytes, key: key,
                    idempotency: idempotencyKey.map {
                        // A control character cannot be in a header's key: no single request's key
                        // is an item's.
                        Idempotency(key: "\($0)\u{1F}\(index)", fingerprint: Self.hex(SHA256.hash(data: bytes)))
                    },
                    maximumDevices: configuration.maximumDevicesPerRequest, waiting: false)
                var members = queued.answer
                members["status"] = .integer(202)
                if queued.replayed { members["replayed"] = .bool(true) }
                results.append(.object(members))
            } catch {
                let problem = refusals.problem(for: error, request: request, logger: context.logger)
                var members = problem.members
                // No header can carry an item's wait.
                if let retryAfter = problem.retryAfter { members["retry-after"] = .integer(Int64(retryAfter)) }
                results.append(.object(["status": .integer(Int64(problem.status.code)), "problem": .object(members)]))
            }
        }
        return jsonResponse(.ok, .object(["results": .array(results)]))
    }

    /// A batch's `notifications`: 1 to `maximumItems` JSON objects (each checked as a
    /// notification by itself later).
    static func batchItems(_ body: [UInt8], maximumItems: Int) throws -> [JSONValue] {
        let fields: [String: JSONValue]
        do throws(RequestProblem) {
            fields = try NotificationRequest.object(body)
        } catch {
            throw Problem(error)
        }
        guard case .array(let items)? = fields["notifications"], fields.count == 1 else {
            throw Problem(
                .badRequest,
                #"give {"notifications": [{…}, …]}: an array of notification requests, each as POST /v1/notifications takes it"#,
                field: "notifications")
        }
        guard (1...maximumItems).contains(items.count) else {
            throw Problem(
                .badRequest, "has \(items.count) notifications; give 1 to \(maximumItems) in one batch",
                field: "notifications")
        }
        for (index, item) in items.enumerated() {
            guard case .object = item else {
                throw Problem(
                    .badRequest, "is \(item.typeName); each is a notification request, a JSON object",
                    field: "notifications[\(index)]")
            }
        }
        return items
    }

    /// `DELETE /v1/notifications/{id}`: what has not been claimed is finished as cancelled, never
    /// sent; what is on the wire finishes with its own outcome. The answer is the notification's
    /// progress, with how many device-sends this request cancelled.
    private func cancel(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try await authenticate(request, caller: context.caller)
        let id = context.parameters.get("id") ?? ""
        guard let before = try await store.progress(of: id), key.apps.contains(before.app) else {
            throw Problem(.notFound, "no notification \(id) for this key")
        }
        let cancelled = try await store.cancel(
            notificationID: id, message: "not sent: cancelled by DELETE /v1/notifications/\(id) (key \(key.name))",
            now: configuration.clock.now)
        if cancelled > 0 { cancellations.increment(app: before.app, by: cancelled) }
        guard let progress = try await store.progress(of: id) else {
            throw Problem(.notFound, "no notification \(id) for this key")
        }
        var document = Self.document(of: progress)
        document["cancelled-now"] = .integer(Int64(cancelled))
        return jsonResponse(.ok, .object(document))
    }

    private func progress(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try await authenticate(request, caller: context.caller)
        let id = context.parameters.get("id") ?? ""
        // Another key's notification is as absent as one that never was.
        guard let progress = try await store.progress(of: id), key.apps.contains(progress.app) else {
            throw Problem(.notFound, "no notification \(id) for this key")
        }
        return jsonResponse(.ok, .object(Self.document(of: progress)))
    }

    /// A notification's progress as `GET /v1/notifications/{id}` answers it.
    static func document(of progress: NotificationProgress) -> [String: JSONValue] {
        var counts: [String: Int] = [:]
        for result in OutcomeResult.allCases where result != .requeued { counts[result.rawValue] = 0 }
        let deliveries: [JSONValue] = progress.deliveries.map { delivery in
            var members: [String: JSONValue] = ["attempts": .integer(Int64(delivery.attempts))]
            if delivery.token.hasPrefix(NotificationRequest.channelPrefix) {
                members["channel"] = .string(String(delivery.token.dropFirst(NotificationRequest.channelPrefix.count)))
            } else {
                members["token"] = .string(delivery.token)
            }
            let result = OutcomeResult(delivery)
            counts[result.rawValue, default: 0] += 1
            members["state"] = .string(result.rawValue)
            if delivery.state == "done", let status = delivery.status { members["status"] = .integer(Int64(status)) }
            if let reason = delivery.reason { members["reason"] = .string(reason) }
            if let apnsID = delivery.apnsID { members["apns-id"] = .string(apnsID) }
            if delivery.state == "done", delivery.status == nil {
                members["error"] = .object([
                    "kind": .string(delivery.errorKind ?? FailureKind.other.rawValue),
                    "delivery": .string(delivery.delivery ?? "unknown"),
                    "message": .string(delivery.message ?? ""),
                ])
            }
            return .object(members)
        }
        return [
            "id": .string(progress.id), "push-type": .string(progress.pushType), "app": .string(progress.app),
            "created-at": .integer(Int64((progress.createdAt.timeIntervalSince1970 * 1000).rounded())),
            "done": .bool(counts["queued"] == 0), "counts": .object(counts.mapValues { .integer(Int64($0)) }),
            "deliveries": .array(deliveries),
        ]
    }

    private func unregistered(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try await authenticate(request, caller: context.caller)
        let query = request.uri.queryParameters
        var cursor: Int64 = 0
        if let since = query["since"] {
            guard let value = Int64(String(since)), value >= 0 else {
                throw Problem(
                    .badRequest,
                    "since=\(since) is not a cursor; give the next-since of the previous page, or leave it out",
                    field: "since")
            }
            cursor = value
        }
        var limit = 1_000
        if let text = query["limit"] {
            guard let value = Int(String(text)), (1...10_000).contains(value) else {
                throw Problem(.badRequest, "limit=\(text) is not a number from 1 to 10000", field: "limit")
            }
            limit = value
        }
        var apps = key.apps
        if let app = query["app"] {
            guard key.apps.contains(String(app)) else {
                throw Problem(.forbidden, "the key \(key.name) may not read \(app)", field: "app")
            }
            apps = [String(app)]
        }
        let tokens = try await store.unregistered(apps: apps, after: cursor, limit: limit)
        return jsonResponse(
            .ok,
            .object([
                "tokens": .array(
                    tokens.map { token in
                        var members: [String: JSONValue] = [
                            "app": .string(token.app), "token": .string(token.token),
                            "reported-at": .integer(Int64((token.reportedAt.timeIntervalSince1970 * 1000).rounded())),
                        ]
                        members["invalid-since"] =
                            token.invalidSince.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) }
                            ?? .null
                        return .object(members)
                    }),
                "next-since": .integer(tokens.last?.cursor ?? cursor),
            ]))
    }

    private func acknowledge(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try await authenticate(request, caller: context.caller)
        let body = try await readBody(request)
        guard let root = try? JSONDecoder().decode([String: JSONValue].self, from: Data(body)),
            case .string(let app)? = root["app"], case .array(let values)? = root["tokens"],
            Set(root.keys) == ["app", "tokens"]
        else {
            throw Problem(.badRequest, #"give {"app": "<bundle id>", "tokens": ["<hex token>", …]}"#)
        }
        guard key.apps.contains(app) else {
            throw Problem(.forbidden, "the key \(key.name) may not change \(app)", field: "app")
        }
        guard values.count <= configuration.maximumDevicesPerRequest else {
            throw Problem(
                .badRequest, "at most \(configuration.maximumDevicesPerRequest) tokens in one request", field: "tokens")
        }
        var tokens: [String] = []
        for (index, value) in values.enumerated() {
            guard case .string(let text) = value, let device = try? Device(token: text) else {
                throw Problem(.badRequest, "is not a hex device token", field: "tokens[\(index)]")
            }
            tokens.append(device.token)
        }
        let deleted = try await store.acknowledgeUnregistered(app: app, tokens: tokens)
        return jsonResponse(.ok, .object(["deleted": .integer(Int64(deleted))]))
    }

    // MARK: Shared steps

    /// The caller's key: `Authorization: Bearer <key>`, known, and within its rate; `caller` is
    /// the address whose look-ups of unknown keys are counted.
    private func authenticate(_ request: Request, caller: String) async throws -> APIKey {
        guard let header = request.headers[.authorization] else {
            throw Problem(.unauthorized, "give an API key: Authorization: Bearer <key>")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw Problem(.unauthorized, "the Authorization header is not \"Bearer <key>\"")
        }
        let hash = GatewayAPI.hash(apiKey: String(parts[1]))
        let now = configuration.clock.now
        guard let key = try await keys.key(hash: hash, caller: caller, store: store, now: now) else {
            throw Problem(.unauthorized, "the API key is not known")
        }
        AccessLogNote.current?.keyName.withLock { $0 = key.name }
        if let wait = limiter.admit(key: key.name, rate: key.requestsPerSecond, now: now) {
            throw Problem(
                .tooManyRequests,
                "the key \(key.name) may make \(key.requestsPerSecond) requests a second; wait and try again",
                retryAfter: max(1, Int(wait.rounded(.up))))
        }
        return key
    }

    private func readBody(_ request: Request) async throws -> [UInt8] {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > configuration.maximumBodyBytes {
            throw Problem(
                .contentTooLarge, "the body has \(length) bytes; at most \(configuration.maximumBodyBytes) are accepted"
            )
        }
        do {
            let buffer = try await request.body.collect(upTo: configuration.maximumBodyBytes)
            return Array(buffer.readableBytesView)
        } catch {
            throw Problem(.contentTooLarge, "the body is larger than \(configuration.maximumBodyBytes) bytes")
        }
    }
}

/// API keys looked up in the store, remembered for a short while (both known and unknown ones,
/// so that guessing keys does not load the database).
///
/// Thread safety: a `Mutex` guards the table.
final class KeyCache: Sendable {
    private let lifetime: Duration
    private let entries = Mutex<[String: (key: APIKey?, until: Date)]>([:])

    /// Look-ups of keys not remembered: each takes a token from its caller's bucket, given back
    /// when the key is known, so that only guesses spend it, and once a caller's is empty none of
    /// its look-ups reaches the database until it refills; other callers have their own.
    private let lookups = RateLimiter()
    private let unknownPerSecond: Double

    init(lifetime: Duration, unknownPerSecond: Double) {
        self.lifetime = lifetime
        self.unknownPerSecond = unknownPerSecond
    }

    /// The key with this hash, nil when there is none; a ``Problem`` (429) when `caller`'s
    /// look-ups of unknown keys have used up their rate.
    func key(hash: String, caller: String, store: any GatewayStore, now: Date) async throws -> APIKey? {
        if let entry = entries.withLock({ $0[hash] }), entry.until > now { return entry.key }
        if let wait = lookups.admit(key: caller, rate: unknownPerSecond, now: now) {
            throw Problem(
                .tooManyRequests,
                "too many requests with API keys this gateway does not know; wait and try again",
                retryAfter: max(1, Int(wait.rounded(.up))))
        }
        let key = try await store.apiKey(hash: hash)
        if key != nil { lookups.giveBack(key: caller, rate: unknownPerSecond) }
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }
            entries[hash] = (key, now + lifetime)
        }
        return key
    }
}

/// One token bucket per key: `rate` requests a second, bursts of up to twice that.
///
/// Thread safety: a `Mutex` guards the buckets.
final class RateLimiter: Sendable {
    private let buckets = Mutex<[String: (tokens: Double, at: Date)]>([:])

    /// nil when the request may go ahead at `now`; else the seconds until it could.
    func admit(key: String, rate: Double, now: Date) -> Double? {
        guard rate > 0 else { return 1 }
        let burst = max(1, rate * 2)
        return buckets.withLock { buckets in
            // Keyed by caller, the table could grow with every address seen: past 10,000
            // buckets, those full again (idle for their burst's refill) are forgotten, which
            // changes nothing, as a new bucket starts full.
            if buckets.count > 10_000 {
                buckets = buckets.filter { $0.value.tokens + now.timeIntervalSince($0.value.at) * rate < burst }
            }
            var bucket = buckets[key] ?? (burst, now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * rate)
            bucket.at = now
            defer { buckets[key] = bucket }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / rate }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Returns a token ``admit(key:rate:now:)`` took (the request turned out not to count).
    func giveBack(key: String, rate: Double) {
        buckets.withLock { buckets in
            guard var bucket = buckets[key] else { return }
            bucket.tokens = min(max(1, rate * 2), bucket.tokens + 1)
            buckets[key] = bucket
        }
    }
}

/// Each app's settings (``AppSettings``), read from the store at most once per `lifetime`: a
/// limit set with `apns-gateway app limit` applies within it.
///
/// Thread safety: a `Mutex` guards the cached settings; two requests that find them stale at once
/// may both read the store.
final class AppSettingsCache: Sendable {
    private let lifetime: Duration
    private let cached = Mutex<(settings: [String: AppSettings], at: Date)?>(nil)

    init(lifetime: Duration) { self.lifetime = lifetime }

    func settings(of app: String, store: any GatewayStore, now: Date) async throws -> AppSettings? {
        if let fresh = cached.withLock({ $0 }), now - fresh.at < lifetime { return fresh.settings[app] }
        let all = Dictionary(try await store.appSettings().map { ($0.app, $0) }) { first, _ in first }
        cached.withLock { $0 = (all, now) }
        return all[app]
    }
}
