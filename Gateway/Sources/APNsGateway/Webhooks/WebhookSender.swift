import APNs
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When a message that failed is tried again, or given up on: a value given the tries and the
/// time; it reads no clock.
package struct WebhookSchedule: Sendable {
    /// The wait before each next try.
    package var backoff: Backoff
    /// How long after it was made a message is tried.
    package var giveUpAfter: Duration

    /// How a try that failed with `error` at `now` ends, for a message made at `createdAt` that
    /// has been tried `attempts` times (this one included); `factor` is the jitter (0.8–1.2).
    package func after(
        failure error: String, attempts: Int, createdAt: Date, now: Date, factor: Double
    ) -> WebhookTry {
        let next = now + backoff.delay(beforeRetry: attempts, factor: factor)
        guard next <= createdAt + giveUpAfter else {
            return .givenUp(
                error:
                    "\(error); given up \(Int((now - createdAt).seconds)) s after the message was made, after \(attempts) tries"
            )
        }
        return .again(at: next, error: error)
    }
}

/// Delivers the webhook outbox: gathers each endpoint's waiting events into messages, and posts
/// each message, signed (``WebhookSecret``), until its endpoint answers 2xx or the message is given
/// up on (``Configuration/giveUpAfter``, its last error kept for `apns-gateway webhook list`). A
/// message keeps its id on every try: a receiver that sees one twice (its answer was lost, or the
/// gateway stopped before writing it down) recognises it by its `webhook-id`.
///
/// Thread safety: `Sendable`; its state is the store's.
public final class WebhookSender: Service, Sendable {
    /// How the sender batches and tries.
    public struct Configuration: Sendable {
        /// Events in one message, at most.
        public var batch = 100
        /// Messages tried at once.
        public var concurrency = 8
        /// How often the outbox is read.
        public var pollInterval: Duration = .seconds(1)
        /// How long a try may take, its whole answer included, on ``clock``; then it is cancelled
        /// and counts as failed.
        public var timeout: Duration = .seconds(10)
        /// How long a claimed message is this sender's: longer than a try, so that another
        /// instance takes it over only when this one stopped.
        public var lease: Duration = .seconds(60)
        /// The wait before each next try: short at first, so a receiver that was restarting gets
        /// its messages soon, then growing, so one down for hours is not asked every few seconds;
        /// jittered, so instances retrying together spread out.
        public var backoff = Backoff(initial: .seconds(5), maximum: .seconds(3_600), jitter: 0.2)
        /// How long after it was made a message is tried; then it is given up on, with its last
        /// error kept. Long enough to ride out a receiver's outage, short enough that an app does
        /// not get a burst of stale outcomes long after it stopped caring.
        public var giveUpAfter: Duration = .seconds(86_400)
        /// The time it decides and waits by.
        public var clock: any GatewayClock = SystemGatewayClock()
        /// This sender's name in leases (the dispatcher's, by default).
        public var instance = Dispatcher.Configuration().instance
        /// This start of the process, as its dispatcher registered it (``Dispatcher/identity``):
        /// the next start of the same instance then releases at once what this one held
        /// (``GatewayInstance/webhookOwner(name:incarnation:)``). Another value leaves what it
        /// held to its lease.
        package var incarnation = UUID().uuidString

        public init() {}
    }

    let store: any GatewayStore
    let vault: CredentialVault
    let configuration: Configuration
    let logger: Logger
    /// `apns_gateway_webhook_tries_total{result}`: delivered, failed (tried again later), given-up.
    let tries: [String: Counter]
    /// `apns_gateway_webhook_waiting_events` and `apns_gateway_webhook_pending_messages`: the
    /// outbox's backlog, read at each poll. A receiver that is down shows as pending messages
    /// that grow; a sender that cannot keep up, as waiting events.
    let waitingEvents: Gauge
    let pendingMessages: Gauge
    /// The owner of the messages it claims.
    var owner: String {
        GatewayInstance.webhookOwner(name: configuration.instance, incarnation: configuration.incarnation)
    }

    /// A sender that delivers `database`'s outbox with the secrets `vault` opens.
    public convenience init(
        database: GatewayDatabase, vault: CredentialVault, configuration: Configuration = .init(), logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.init(
            store: database.store, vault: vault, configuration: configuration, logger: logger,
            metricsFactory: metricsFactory)
    }

    package init(
        store: any GatewayStore, vault: CredentialVault, configuration: Configuration = .init(), logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.store = store
        self.vault = vault
        self.configuration = configuration
        self.logger = logger
        let factory = metricsFactory ?? MetricsSystem.factory
        tries = Dictionary(
            uniqueKeysWithValues: ["delivered", "failed", "given-up"].map {
                ($0, Counter(label: "apns_gateway_webhook_tries_total", dimensions: [("result", $0)], factory: factory))
            })
        waitingEvents = Gauge(label: "apns_gateway_webhook_waiting_events", factory: factory)
        pendingMessages = Gauge(label: "apns_gateway_webhook_pending_messages", factory: factory)
    }

    /// Delivers until graceful shutdown (or cancellation); a try under way then is finished. What
    /// is not delivered stays in the outbox for the next start, or another instance.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    while try await self.sendOnce() > 0, !Task.isCancelled {}
                    let backlog = try await self.store.webhookBacklog()
                    self.waitingEvents.record(backlog.waitingEvents)
                    self.pendingMessages.record(backlog.pendingMessages)
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning(
                        "reading the webhook outbox failed", metadata: ["error": "\(DatabaseFailure(error))"])
                }
                try? await self.configuration.clock.sleep(for: self.configuration.pollInterval)
            }
        }
    }

    /// Makes messages of the waiting events, then tries the due ones (``Configuration/concurrency``
    /// at a time); returns how many it tried.
    @discardableResult
    package func sendOnce() async throws -> Int {
        let now = configuration.clock.now
        _ = try await store.makeWebhookMessages(batch: configuration.batch, now: now)
        let messages = try await store.claimWebhookMessages(
            owner: owner, limit: configuration.concurrency, now: now,
            leaseUntil: now + configuration.lease)
        // Finished even if shutdown begins meanwhile: a lease left to expire would delay them.
        await Task {
            await withDiscardingTaskGroup { group in
                for message in messages { group.addTask { await self.attempt(message) } }
            }
        }.value
        return messages.count
    }

    /// One try of `message`, written back.
    private func attempt(_ message: WebhookMessage) async {
        let endpoint = message.endpoint.name
        let outcome: WebhookTry
        if let failure = await post(message) {
            let now = configuration.clock.now
            outcome = WebhookSchedule(backoff: configuration.backoff, giveUpAfter: configuration.giveUpAfter).after(
                failure: failure, attempts: message.attempts + 1, createdAt: message.createdAt, now: now,
                factor: Double.random(in: 0.8...1.2))
        } else {
            outcome = .delivered
        }
        switch outcome {
        case .delivered:
            tries["delivered"]?.increment()
            logger.debug("webhook delivered", metadata: ["endpoint": "\(endpoint)", "webhook.id": "\(message.id)"])
        case .again(let at, let error):
            tries["failed"]?.increment()
            logger.info(
                "webhook not delivered; trying again",
                metadata: [
                    "endpoint": "\(endpoint)", "webhook.id": "\(message.id)", "error": "\(error)",
                    "retry_in_ms": "\(Int(max(0, at.timeIntervalSince(configuration.clock.now)) * 1000))",
                ])
        case .givenUp(let error):
            tries["given-up"]?.increment()
            logger.warning(
                "webhook given up on: its events stay in the message, listed by `apns-gateway webhook list`",
                metadata: ["endpoint": "\(endpoint)", "webhook.id": "\(message.id)", "error": "\(error)"])
        }
        do {
            try await store.finishWebhookTry(
                id: message.id, owner: owner, result: outcome, now: configuration.clock.now)
        } catch {
            // The lease lets the message go; it is tried again, with the same id.
            logger.warning(
                "writing a webhook's try failed; it will be tried again",
                metadata: ["webhook.id": "\(message.id)", "error": "\(DatabaseFailure(error))"])
        }
    }

    /// Posts `message`; nil when the endpoint answered 2xx, else why not (never the secret).
    private func post(_ message: WebhookMessage) async -> String? {
        guard
            case .webhookSecret(let text)? = vault.open(
                sealed: message.endpoint.sealed, name: WebhookEndpoint.sealingName(message.endpoint.name), revision: 1),
            let secret = WebhookSecret(text: text)
        else {
            return "the endpoint's secret does not open with this key-encryption key"
        }
        guard let url = URL(string: message.endpoint.url) else { return "the endpoint's URL is not one" }
        let body = Array(message.body.utf8)
        var request = URLRequest(url: url, timeoutInterval: configuration.timeout.seconds)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("apns-gateway", forHTTPHeaderField: "User-Agent")
        let timestamp = Int(configuration.clock.now.timeIntervalSince1970)
        for (name, value) in secret.headers(id: message.id, timestamp: timestamp, body: body) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        do {
            switch try await Self.answer(to: request, within: configuration.timeout, on: configuration.clock) {
            case .status(let status): return (200..<300).contains(status) ? nil : "the endpoint answered \(status)"
            case .notHTTP: return "no HTTP answer"
            case .timedOut: return "the endpoint's whole answer did not come within \(configuration.timeout)"
            }
        } catch {
            return "the endpoint could not be reached: \(error.localizedDescription)"
        }
    }

    /// How a try's request was answered.
    private enum Answer {
        case status(Int)
        case notHTTP
        case timedOut
    }

    /// `request`'s answer, or ``Answer/timedOut`` (the request cancelled) when no whole answer came
    /// within `timeout` on `clock`. URLSession's own timeout is an idle one: a receiver that sends a
    /// byte now and then would hold a try, and its message's lease, as long as it liked, and the
    /// message could be claimed and sent again by another instance meanwhile.
    private static func answer(
        to request: URLRequest, within timeout: Duration, on clock: any GatewayClock
    ) async throws -> Answer {
        try await withThrowingTaskGroup(of: Answer.self) { group in
            group.addTask {
                let (_, response) = try await URLSession.shared.data(for: request)
                guard let status = (response as? HTTPURLResponse)?.statusCode else { return .notHTTP }
                return .status(status)
            }
            group.addTask {
                try await clock.sleep(for: timeout)
                return .timedOut
            }
            // The other child is cancelled: a request URLSession stops at once, a sleep ends.
            defer { group.cancelAll() }
            return try await group.next() ?? .timedOut
        }
    }
}
