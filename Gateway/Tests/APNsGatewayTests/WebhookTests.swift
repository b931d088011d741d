@testable import APNsGateway
import APNs
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// Outcomes pushed to the app: each final outcome's events go into an outbox in the transaction
/// that finishes it, are gathered into messages signed as Standard Webhooks sign them, and tried
/// until the endpoint takes them or their time is up, each message with the same id on every try.
@Suite(.timeLimit(.minutes(2))) struct WebhookTests {
    /// Standard Webhooks' own example (the specification's, and what its Python library makes):
    /// an app verifies what the gateway signs with one of that specification's libraries.
    @Test func aSignatureIsStandardWebhooks() throws {
        let secret = try #require(WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        #expect(
            secret.signature(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8)
            )
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(secret.text == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect("\(secret)" == "WebhookSecret(redacted)")
        #expect(WebhookSecret(text: "whsec_c2hvcnQ=") == nil, "fewer than 24 bytes")
        #expect(WebhookSecret(text: WebhookSecret.make().text) != nil)
    }

    /// A failed try waits longer each time, and the message is given up on once the next try
    /// would come after its time is up: the error kept says why.
    @Test func aFailedTryWaitsLongerUntilTheMessagesTimeIsUp() {
        let schedule = WebhookSchedule(
            backoff: Backoff(initial: .seconds(5), maximum: .seconds(3_600), jitter: 0), giveUpAfter: .seconds(60))
        let made = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(
            schedule.after(failure: "503", attempts: 1, createdAt: made, now: made, factor: 1)
                == .again(at: made + .seconds(5), error: "503"))
        #expect(
            schedule.after(failure: "503", attempts: 3, createdAt: made, now: made + .seconds(20), factor: 1)
                == .again(at: made + .seconds(40), error: "503"))
        guard
            case .givenUp(let error) = schedule.after(
                failure: "the endpoint answered 503", attempts: 4, createdAt: made, now: made + .seconds(40), factor: 1)
        else {
            Issue.record("not given up on")
            return
        }
        #expect(error == "the endpoint answered 503; given up 40 s after the message was made, after 4 tries")
    }

    /// A receiver that refuses its first two messages: every final outcome of a notification of 30
    /// devices arrives, each message signed, with its 410s as `unregistered` events too; a message
    /// tried again keeps its id. Another endpoint, which nothing answers, is given up on, its error
    /// kept for `apns-gateway webhook list`.
    @Test(arguments: Backend.allCases)
    func everyFinalOutcomeReachesTheEndpointSigned(_ backend: Backend) async throws {
        let setup = try await GatewayAPITests.Setup.start(backend)
        let tokens = (0..<30).map { String(format: "%064x", 1_000 + $0) }
        for token in tokens.prefix(5) {
            setup.server.reject(
                deviceToken: token, with: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
        }
        let vault = try CredentialVault(key: Array(repeating: 3, count: 32))
        let secret = WebhookSecret.make()
        @Sendable func endpoint(_ name: String, url: String) throws -> WebhookEndpoint {
            try .test(name, url: url, secret: secret, vault: vault)
        }
        let received = Mutex<(tries: Int, messages: [(id: String, body: String)], unsigned: Int)>((0, [], 0))
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            let body = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let id = request.headers[HTTPField.Name("webhook-id")!] ?? ""
            let timestamp = request.headers[HTTPField.Name("webhook-timestamp")!].flatMap(Int.init) ?? 0
            let signature = request.headers[HTTPField.Name("webhook-signature")!] ?? ""
            return received.withLock { received in
                received.tries += 1
                guard received.tries > 2 else { return .serviceUnavailable }
                guard signature == secret.signature(id: id, timestamp: timestamp, body: body) else {
                    received.unsigned += 1
                    return .unauthorized
                }
                received.messages.append((id, String(decoding: body, as: UTF8.self)))
                return .ok
            }
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await receiver.test(.live) { client in
            let port = try #require(client.port)
            #expect(try await setup.store.addWebhookEndpoint(endpoint("hooks", url: "http://127.0.0.1:\(port)/hook")))
            #expect(try await setup.store.addWebhookEndpoint(endpoint("nobody", url: "http://127.0.0.1:9/hook")))
            #expect(try await setup.store.addWebhookEndpoint(endpoint("hooks", url: "http://127.0.0.1:1/")) == false)
            #expect(try await setup.store.enqueueAlert(id: "n", tokens: tokens) == .accepted)
            while try await setup.dispatcher.dispatchOnce() > 0 {}

            let clock = ManualGatewayClock()
            var configuration = WebhookSender.Configuration()
            configuration.batch = 8
            configuration.clock = clock
            configuration.giveUpAfter = .seconds(60)
            configuration.backoff = Backoff(initial: .seconds(5), maximum: .seconds(20), jitter: 0)
            let sender = WebhookSender(
                store: setup.store, vault: vault, configuration: configuration, logger: Logger(label: "test"))
            for _ in 0..<20 {
                try await sender.sendOnce()
                clock.advance(by: 21)
            }
            let status = Dictionary(
                uniqueKeysWithValues: try await setup.store.webhookEndpoints().map { ($0.endpoint.name, $0) })
            let hooks = try #require(status["hooks"])
            let nobody = try #require(status["nobody"])
            // 30 outcome events and 5 unregistered ones, 8 to a message: 5 messages each.
            #expect(hooks.delivered == 5 && hooks.pending == 0 && hooks.waiting == 0 && hooks.givenUp == 0)
            #expect(nobody.givenUp == 5 && nobody.delivered == 0 && nobody.pending == 0)
            #expect(nobody.lastError?.contains("could not be reached") == true, "\(nobody.lastError ?? "none")")
            #expect(nobody.lastError?.contains("given up") == true)
        }
        let (tries, messages, unsigned) = received.withLock { ($0.tries, $0.messages, $0.unsigned) }
        #expect(unsigned == 0 && tries == messages.count + 2)
        #expect(Set(messages.map(\.id)).count == 5, "refused messages came again with their ids")
        var outcomes: [String: String] = [:]
        var unregistered: Set<String> = []
        for message in messages {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(message.body.utf8)) as? [String: Any])
            #expect(object["type"] as? String == "apns-gateway.events")
            for event in try #require(object["data"] as? [[String: Any]]) {
                let token = try #require(event["token"] as? String)
                switch event["type"] as? String {
                case "outcome": outcomes[token] = event["state"] as? String
                case "unregistered": unregistered.insert(token)
                default: Issue.record("an event of no known type: \(event)")
                }
            }
        }
        #expect(outcomes.count == 30)
        #expect(outcomes.filter { $0.value == "accepted" }.count == 25)
        #expect(outcomes.filter { $0.value == "rejected" }.count == 5)
        #expect(unregistered == Set(tokens.prefix(5)))
        // Kept as long as the outcomes they carry: past the retention, pruned with them.
        _ = try await setup.store.deleteFinished(before: Date().addingTimeInterval(86_400), limit: 500)
        #expect(try await setup.store.webhookEndpoints().allSatisfy { $0.delivered == 0 && $0.givenUp == 0 })
        try await setup.stop()
    }

    /// A receiver that takes the request and never finishes its answer holds a try only for the
    /// configured timeout on the sender's clock (URLSession's own timeout is an idle one, which a
    /// receiver sending a byte now and then never meets): the try ends failed, its reason kept,
    /// and the message waits for its next try.
    @Test func aTryEndsAtItsTimeoutWhateverTheReceiverDoes() async throws {
        let setup = try await GatewayAPITests.Setup.start(.sqlite)
        let vault = try CredentialVault(key: Array(repeating: 3, count: 32))
        let secret = WebhookSecret.make()
        let held = Mutex<(arrived: Int, released: Bool, waiting: [CheckedContinuation<Void, Never>])>((0, false, []))
        let router = Router()
        router.post("/hook") { _, _ -> HTTPResponse.Status in
            await withCheckedContinuation { continuation in
                let release = held.withLock { held -> Bool in
                    held.arrived += 1
                    if !held.released { held.waiting.append(continuation) }
                    return held.released
                }
                if release { continuation.resume() }
            }
            return .ok
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await receiver.test(.live) { client in
            let port = try #require(client.port)
            #expect(
                try await setup.store.addWebhookEndpoint(
                    .test("slow", url: "http://127.0.0.1:\(port)/hook", secret: secret, vault: vault)))
            #expect(try await setup.store.enqueueAlert(id: "n", tokens: [String(format: "%064x", 7)]) == .accepted)
            while try await setup.dispatcher.dispatchOnce() > 0 {}

            let clock = ManualGatewayClock()
            var configuration = WebhookSender.Configuration()
            configuration.clock = clock
            configuration.timeout = .seconds(3_600)  // URLSession's idle timeout, the same, never fires here
            let sender = WebhookSender(
                store: setup.store, vault: vault, configuration: configuration, logger: Logger(label: "test"))
            let finished = Mutex(false)
            let trying = Task {
                let tried = try await sender.sendOnce()
                finished.withLock { $0 = true }
                return tried
            }
            #expect(await Poll.until { held.withLock { $0.arrived } == 1 }, "the receiver holds the request")
            // The try's timer starts beside the request: the clock moves on until the try ends.
            let ended = await Poll.until(within: .seconds(30)) {
                clock.advance(by: 3_600)
                return finished.withLock { $0 }
            }
            #expect(ended, "the try ended at its timeout")
            if ended {
                #expect(try await trying.value == 1)
                let status = try #require(try await setup.store.webhookEndpoints().first)
                #expect(status.pending == 1 && status.delivered == 0 && status.givenUp == 0)
                #expect(
                    status.lastError?.contains("whole answer did not come within") == true,
                    "\(status.lastError ?? "none")")
            }
            let waiting = held.withLock { held in
                held.released = true
                defer { held.waiting = [] }
                return held.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
        try await setup.stop()
    }

    /// `apns-gateway webhook add|list|remove`: a plain-HTTP URL elsewhere refused, the secret made
    /// and printed once (then only sealed), a listing with how its messages stand.
    @Test func endpointsAreManagedFromTheCommandLine() async throws {
        let queue = try await TestStore(.sqlite)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("webhooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let kek = folder.appendingPathComponent("kek")
        try CredentialVault.newKey().write(to: kek, atomically: true, encoding: .utf8)
        let database = ["--database", queue.url, "--credential-key-file", kek.path]
        func gateway(_ arguments: [String]) throws -> (Int32, String) {
            try ManyCredentialsTests.run(arguments + database)
        }
        let (refused, refusal) = try gateway([
            "webhook", "add", "--name", "hooks", "--app", "com.example.app", "--url", "http://shop.example/events",
        ])
        #expect(refused != 0 && refusal.contains("give https://"), "\(refusal)")
        let (added, addition) = try gateway([
            "webhook", "add", "--name", "hooks", "--app", "com.example.app", "--url", "https://shop.example/events",
        ])
        #expect(added == 0, "\(addition)")
        let secret = try #require(addition.split(separator: "\n").first { $0.hasPrefix("secret whsec_") })
        #expect(WebhookSecret(text: String(secret.dropFirst("secret ".count))) != nil)
        let (_, listing) = try gateway(["webhook", "list"])
        #expect(
            listing.contains(
                "hooks\tcom.example.app\thttps://shop.example/events\twaiting 0\tpending 0\tdelivered 0\tgiven up 0"),
            "\(listing)")
        #expect(!listing.contains("whsec_"), "the secret is printed once, when it is made")
        let stored = try #require(try await queue.store.webhookEndpoints().first?.endpoint)
        #expect(!stored.sealed.contains(String(secret.dropFirst("secret whsec_".count))))
        let (removed, removal) = try gateway(["webhook", "remove", "--name", "hooks"])
        #expect(removed == 0 && removal.contains("removed hooks"), "\(removal)")
        #expect(try await queue.store.webhookEndpoints().isEmpty)
        await queue.remove()
    }

    /// Two instances on one database share the outbox: while both gather and try at once, each
    /// message is made once and delivered once (a lease and `SKIP LOCKED` on PostgreSQL, SQLite's
    /// one writer), and every event arrives.
    @Test(arguments: Backend.allCases)
    func twoInstancesShareTheOutbox(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let vault = try CredentialVault(key: Array(repeating: 4, count: 32))
        let secret = WebhookSecret.make()
        let received = Mutex<[String]>([])
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            let body = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let id = request.headers[HTTPField.Name("webhook-id")!] ?? ""
            let timestamp = request.headers[HTTPField.Name("webhook-timestamp")!].flatMap(Int.init) ?? 0
            guard
                request.headers[HTTPField.Name("webhook-signature")!]
                    == secret.signature(id: id, timestamp: timestamp, body: body)
            else { return .unauthorized }
            received.withLock { $0.append(String(decoding: body, as: UTF8.self)) }
            return .ok
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await receiver.test(.live) { client in
            let port = try #require(client.port)
            #expect(
                try await queue.store.addWebhookEndpoint(
                    .test(url: "http://127.0.0.1:\(port)/hook", secret: secret, vault: vault)))
            // 400 outcomes written straight into the outbox, as complete() writes them.
            #expect(
                try await queue.store.enqueueAlert(id: "n", tokens: (0..<400).map { String(format: "%064x", $0) })
                    == .accepted)
            #expect(try await queue.store.claimAndAccept(owner: "a", limit: 400) == 400)
            func sender(_ name: String) -> WebhookSender {
                var configuration = WebhookSender.Configuration()
                configuration.batch = 10
                configuration.concurrency = 4
                configuration.instance = name
                return WebhookSender(
                    store: queue.store, vault: vault, configuration: configuration, logger: Logger(label: name))
            }
            let (one, two) = (sender("one"), sender("two"))
            async let first: Void = { while try await one.sendOnce() > 0 {} }()
            async let second: Void = { while try await two.sendOnce() > 0 {} }()
            _ = try await (first, second)
        }
        let bodies = received.withLock { $0 }
        #expect(bodies.count == 40, "40 messages of 10, each delivered once")
        var tokens: [String] = []
        for body in bodies {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            for event in try #require(object["data"] as? [[String: Any]]) {
                tokens.append(try #require(event["token"] as? String))
            }
        }
        #expect(tokens.count == 400 && Set(tokens).count == 400)
        let status = try #require(try await queue.store.webhookEndpoints().first)
        #expect(status.delivered == 40 && status.pending == 0 && status.waiting == 0)
        await queue.remove()
    }

    /// A start of an instance that registers after its earlier start was killed takes back at
    /// once the webhook messages that start's sender held (no wait for their leases), and never
    /// the ones its own sender claimed before its dispatcher registered. The outbox's backlog
    /// counts events waiting and messages pending throughout.
    @Test(arguments: Backend.allCases)
    func aRestartedInstanceTakesBackWhatItsKilledStartHeld(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let vault = try CredentialVault(key: Array(repeating: 5, count: 32))
        #expect(try await queue.store.addWebhookEndpoint(.test(url: "http://127.0.0.1:9/hook", vault: vault)))
        #expect(
            try await queue.store.enqueueAlert(id: "n", tokens: (0..<20).map { String(format: "%064x", $0) })
                == .accepted)
        let start = Date()
        #expect(try await queue.store.claimAndAccept(owner: "a", limit: 20, now: start) == 20)
        #expect(try await queue.store.webhookBacklog() == WebhookBacklog(waitingEvents: 20, pendingMessages: 0))
        #expect(try await queue.store.makeWebhookMessages(batch: 10, now: start) == 2)
        #expect(try await queue.store.webhookBacklog() == WebhookBacklog(waitingEvents: 0, pendingMessages: 2))

        // The killed start: registered, its sender holding one message, then no more heartbeats.
        let killed = GatewayInstance(name: "a", host: "elsewhere", processID: 7, incarnation: "killed")
        #expect(
            try await queue.store.register(killed, now: start, staleAfter: .seconds(60))
                == .registered(releasedClaims: 0))
        let held = try await queue.store.claimWebhookMessages(
            owner: GatewayInstance.webhookOwner(name: "a", incarnation: "killed"), limit: 1, now: start,
            leaseUntil: start + 60)
        // The next start's sender claims the other before its dispatcher registers.
        let next = GatewayInstance(name: "a", incarnation: "next")
        let own = try await queue.store.claimWebhookMessages(
            owner: GatewayInstance.webhookOwner(name: "a", incarnation: "next"), limit: 1, now: start,
            leaseUntil: start + 60)
        #expect(held.count == 1 && own.count == 1)
        #expect(
            try await queue.store.register(next, now: start + 120, staleAfter: .seconds(60))
                == .registered(releasedClaims: 0))
        // Within both leases: only the killed start's message is free again.
        let free = try await queue.store.claimWebhookMessages(
            owner: "b#1", limit: 10, now: start + 1, leaseUntil: start + 61)
        #expect(free.map(\.id) == held.map(\.id))
        #expect(try await queue.store.webhookBacklog() == WebhookBacklog(waitingEvents: 0, pendingMessages: 2))
        await queue.remove()
    }
}
