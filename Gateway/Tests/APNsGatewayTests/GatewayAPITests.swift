import APNs
import APNsGateway
import APNsMockServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The gateway end to end, in process: the HTTP API (Hummingbird's test client), a real SQLite
/// file or PostgreSQL database, the dispatcher, and the library's token connector through libcurl
/// to the mock APNs.
@Suite struct GatewayAPITests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    static let unregistered = "ab" + String(repeating: "cd", count: 31)

    /// A gateway on a fresh SQLite file, a mock APNs, a connector to it, and two API keys.
    struct Setup {
        let server: MockAPNsServer
        let connector: TokenConnector
        let queue: TestStore
        var store: any GatewayStore { queue.store }
        let dispatcher: Dispatcher
        let api: GatewayAPI
        /// May send to com.example.app.
        let key: String
        /// May send to com.other.app only.
        let otherKey: String

        static func start(
            _ backend: Backend, limits: (inout GatewayAPI.Configuration) -> Void = { _ in },
            sending: (inout Dispatcher.Configuration) -> Void = { _ in },
            transport adjustTransport: (inout TransportConfiguration) -> Void = { _ in }
        ) async throws -> Setup {
            let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
            var configuration = MockAPNsServer.Configuration(signingKeys: [signingKey])
            configuration.strict = true
            let server = try await MockAPNsServer.start(configuration)
            var transport = TransportConfiguration()
            // A pool of one: a loaded machine can make the mock's streams cycle slowly, and a test
            // that paces its sends must not meet a connection added for it.
            transport.additionalConnectionsWhenSlow = 0
            transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
            adjustTransport(&transport)
            let connector = try TokenConnector(
                teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
                environment: .custom(host: server.host, port: server.port), transport: transport)
            let queue = try await TestStore(backend)
            let store = queue.store
            let key = GatewayAPI.makeAPIKey()
            let otherKey = GatewayAPI.makeAPIKey()
            try await store.addAPIKey(
                APIKey(
                    name: "app", hash: GatewayAPI.hash(apiKey: key), apps: ["com.example.app"], requestsPerSecond: 1000)
            )
            try await store.addAPIKey(
                APIKey(
                    name: "other", hash: GatewayAPI.hash(apiKey: otherKey), apps: ["com.other.app"],
                    requestsPerSecond: 1))
            var sendingConfiguration = Dispatcher.Configuration()
            sending(&sendingConfiguration)
            let dispatcher = Dispatcher(
                store: store, connector: AnyConnector(connector), configuration: sendingConfiguration,
                logger: Logger(label: "test"))
            var apiConfiguration = GatewayAPI.Configuration()
            limits(&apiConfiguration)
            let api = GatewayAPI(store: store, configuration: apiConfiguration, authenticationMethod: .token)
            return Setup(
                server: server, connector: connector, queue: queue, dispatcher: dispatcher, api: api, key: key,
                otherKey: otherKey)
        }

        func stop() async throws {
            await connector.shutdown(gracePeriod: .zero)
            try await server.stop()
            await queue.remove()
        }

        /// Runs `body` with a client of the API.
        func client<Value: Sendable>(
            _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Value
        ) async throws -> Value {
            try await Application(router: api.router()).test(.router, body)
        }
    }

    static func alert(to tokens: [String], app: String = "com.example.app") -> String {
        #"{"push-type":"alert","bundle-id":"\#(app)","alert":{"title":"Hi","body":"There"},"devices":[\#(tokens.map { "\"\($0)\"" }.joined(separator: ","))]}"#
    }

    static func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    @Test(arguments: Backend.allCases)
    func acceptedNotificationsAreSentAndTheirOutcomesAndUnregisteredTokensServed(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        setup.server.reject(
            deviceToken: Self.unregistered, with: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
        let key = setup.key
        let id = try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: Self.bearer(key),
                body: ByteBuffer(string: Self.alert(to: [Self.token, Self.unregistered]))
            ) { response in
                #expect(response.status == .accepted)
                let body = String(buffer: response.body)
                let id = String(body.dropFirst(#"{"devices":2,"id":""#.count).prefix(36))
                #expect(body == #"{"devices":2,"id":"\#(id)"}"#)
                #expect(response.headers[.location] == "/v1/notifications/\(id)")
                return id
            }
        }
        #expect(try await setup.store.queueDepth() == 2)
        #expect(try await setup.dispatcher.dispatchOnce() == 2)
        #expect(try await setup.store.queueDepth() == 0)
        #expect(
            setup.server.requests.map(\.path).sorted()
                == ["/3/device/\(Self.token)", "/3/device/\(Self.unregistered)"].sorted())
        let accepted = setup.server.requests.first { $0.path.hasSuffix(Self.token) }
        let acceptedID = accepted?.responseHeaders.first { $0.name == "apns-id" }?.value ?? "?"
        // Each device-send's apns-id is derived from the notification and the device's position.
        #expect(acceptedID == Dispatcher.apnsID(notification: id, position: 0).description)
        let rejectedID =
            setup.server.requests.first { $0.path.hasSuffix(Self.unregistered) }?.responseHeaders.first {
                $0.name == "apns-id"
            }?.value ?? "?"
        try await setup.client { client in
            try await client.execute(uri: "/v1/notifications/\(id)", method: .get, headers: Self.bearer(key)) {
                response in
                #expect(response.status == .ok)
                let body = String(buffer: response.body)
                let created = body.split(separator: "\"created-at\":").last?.prefix(while: \.isNumber) ?? ""
                #expect(
                    body == """
                        {"app":"com.example.app","counts":{"accepted":1,"cancelled":0,"expired":0,"failed":0,"queued":0,"rejected":1},"created-at":\(created),\
                        "deliveries":[{"apns-id":"\(acceptedID)","attempts":1,"state":"accepted","status":200,"token":"\(Self.token)"},\
                        {"apns-id":"\(rejectedID)","attempts":1,"reason":"Unregistered","state":"rejected","status":410,"token":"\(Self.unregistered)"}],\
                        "done":true,"id":"\(id)","push-type":"alert"}
                        """)
            }
            // Another app's key sees no such notification.
            try await client.execute(uri: "/v1/notifications/\(id)", method: .get, headers: Self.bearer(setup.otherKey))
            { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v1/unregistered", method: .get, headers: Self.bearer(key)) { response in
                #expect(response.status == .ok)
                let body = String(buffer: response.body)
                let reported = body.split(separator: "\"reported-at\":").last?.prefix(while: \.isNumber) ?? ""
                #expect(
                    body == """
                        {"next-since":1,"tokens":[{"app":"com.example.app","invalid-since":1700000000000,"reported-at":\(reported),"token":"\(Self.unregistered)"}]}
                        """)
            }
            try await client.execute(uri: "/v1/unregistered?since=1", method: .get, headers: Self.bearer(key)) {
                response in
                #expect(String(buffer: response.body) == #"{"next-since":1,"tokens":[]}"#)
            }
            try await client.execute(uri: "/v1/unregistered", method: .get, headers: Self.bearer(setup.otherKey)) {
                response in
                #expect(String(buffer: response.body) == #"{"next-since":0,"tokens":[]}"#)
            }
            try await client.execute(
                uri: "/v1/unregistered", method: .delete, headers: Self.bearer(key),
                body: ByteBuffer(string: #"{"app":"com.example.app","tokens":["\#(Self.unregistered)"]}"#)
            ) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"deleted":1}"#)
            }
            try await client.execute(uri: "/v1/unregistered", method: .get, headers: Self.bearer(key)) { response in
                #expect(String(buffer: response.body) == #"{"next-since":0,"tokens":[]}"#)
            }
        }
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func badRequestsGetTheRight4xxAndNothingIsQueued(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend, limits: { $0.maximumBodyBytes = 1 << 20 })
        let key = setup.key
        let otherKey = setup.otherKey
        let tenThousand = (0..<10_000).map { String(format: "%064x", $0) }
        try await setup.client { client in
            func expectProblem(
                _ status: HTTPResponse.Status, _ detail: String, field: String? = nil, headers: HTTPFields = [:],
                body: String?,
                sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                try await client.execute(
                    uri: "/v1/notifications", method: .post, headers: headers, body: body.map { ByteBuffer(string: $0) }
                ) { response in
                    #expect(response.status == status, sourceLocation: sourceLocation)
                    #expect(
                        response.headers[.contentType] == "application/problem+json", sourceLocation: sourceLocation)
                    #expect(
                        response.headers[.wwwAuthenticate]
                            == (status == .unauthorized ? #"Bearer realm="apns-gateway""# : nil),
                        sourceLocation: sourceLocation)
                    let fieldMember = field.map { #","field":"\#($0)""# } ?? ""
                    let expected =
                        #"{"detail":"\#(detail)"\#(fieldMember),"status":\#(status.code),"title":"\#(status.reasonPhrase)","type":"about:blank"}"#
                    #expect(String(buffer: response.body) == expected, sourceLocation: sourceLocation)
                }
            }
            let good = Self.alert(to: [Self.token])
            try await expectProblem(.unauthorized, "give an API key: Authorization: Bearer <key>", body: good)
            try await expectProblem(
                .unauthorized, #"the Authorization header is not \"Bearer <key>\""#,
                headers: [.authorization: "Basic eA=="], body: good)
            try await expectProblem(
                .unauthorized, "the API key is not known", headers: Self.bearer("agk_wrong"), body: good)
            try await expectProblem(
                .forbidden, "the key other may not send to com.example.app; it may send to com.other.app",
                field: "bundle-id",
                headers: Self.bearer(otherKey), body: good)
            try await expectProblem(
                .badRequest, "the body is not valid JSON: The given data was not valid JSON.",
                headers: Self.bearer(key), body: "{nope")
            try await expectProblem(
                .badRequest, "devices: has 10000 tokens; at most 5000 go in one request: split it", field: "devices",
                headers: Self.bearer(key),
                body: Self.alert(to: tenThousand))
            try await expectProblem(
                .badRequest,
                "devices[0]: Invalid device token: the token has 5 hex digits, and a token's bytes make an even number: part of it is missing; pass the whole token the app reported.",
                field: "devices[0]", headers: Self.bearer(key),
                body: Self.alert(to: ["12345"]))
            try await client.execute(uri: "/v1/notifications", method: .put, headers: Self.bearer(key)) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "POST")
            }
            try await expectProblem(
                .contentTooLarge, "the body has 2097152 bytes; at most 1048576 are accepted", headers: Self.bearer(key),
                body: String(repeating: " ", count: 2 << 20))
        }
        #expect(try await setup.store.queueDepth() == 0)
        #expect(try await setup.dispatcher.dispatchOnce() == 0)
        #expect(setup.server.requests.isEmpty)
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func aFullQueueAnswers503WithRetryAfterAndAFastKey429(_ backend: Backend) async throws {
        // The API's time stands still: no bucket refills between requests, however slow they are.
        let clock = ManualGatewayClock()
        let setup = try await Setup.start(
            backend,
            limits: {
                $0.maximumQueueDepth = 1_000
                $0.clock = clock
            })
        let key = setup.key
        let otherKey = setup.otherKey
        try await setup.client { client in
            // The limit counts devices: a request that would take the queue past it is refused
            // whole, and one larger than the whole queue can never be taken.
            var queueStatuses: [HTTPResponse.Status] = []
            for count in [499, 499, 3, 2, 1, 5_000] {
                let body = Self.alert(to: (0..<count).map { String(format: "%064x", $0 + 1) })
                try await client.execute(
                    uri: "/v1/notifications", method: .post, headers: Self.bearer(key), body: ByteBuffer(string: body)
                ) { response in
                    queueStatuses.append(response.status)
                    if response.status == .serviceUnavailable {
                        #expect(response.headers[.retryAfter] == "5")
                        let detail = String(buffer: response.body)
                        let expected =
                            count == 3
                            ? "the queue holds 998 unfinished device-sends and these 3 would take it past its limit (1000); nothing was queued, try again later"
                            : "the queue holds 1000 unfinished device-sends and these 1 would take it past its limit (1000); nothing was queued, try again later"
                        #expect(detail.contains(expected), "\(detail)")
                    }
                }
            }
            let expectedStatuses: [HTTPResponse.Status] = [
                .accepted, .accepted, .serviceUnavailable, .accepted, .serviceUnavailable, .contentTooLarge,
            ]
            #expect(queueStatuses == expectedStatuses)
            // The other key allows 1 request a second with a burst of 2 (RateLimiterTests checks the
            // bucket itself against given times): the third request meets a 429 with a whole
            // number of seconds to wait, and a second later the key may send again.
            var statuses: [HTTPResponse.Status] = []
            var retryAfter: String?
            for _ in 0..<3 {
                let (status, wait) = try await client.execute(
                    uri: "/v1/unregistered", method: .get, headers: Self.bearer(otherKey)
                ) { ($0.status, $0.headers[.retryAfter]) }
                statuses.append(status)
                retryAfter = wait
            }
            #expect(statuses == [.ok, .ok, .tooManyRequests])
            #expect(retryAfter == "1")
            clock.advance(by: 1)
            let again = try await client.execute(
                uri: "/v1/unregistered", method: .get, headers: Self.bearer(otherKey)
            ) { $0.status }
            #expect(again == .ok)
        }
        #expect(try await setup.store.queueDepth() == 1_000)
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func aSenderThatDiesLeavesItsClaimsToAnotherAfterTheLease(_ backend: Backend) async throws {
        let clock = ManualGatewayClock()
        let setup = try await Setup.start(backend, sending: { $0.clock = clock })
        let tokens = (0..<300).map { String(format: "%064x", $0 + 1) }
        let request = try NotificationRequest(body: Array(Self.alert(to: tokens).utf8), maximumDevices: 5000)
        let queued = QueuedNotification(
            id: "n1", keyName: "app", pushType: "alert", app: "com.example.app", storedJSON: request.storedJSON,
            tokens: tokens,
            createdAt: clock.now)
        #expect(try await setup.store.enqueue(queued, maximumQueueDepth: 1000) == .accepted)
        // A sender claims 100 and dies before writing anything.
        let now = clock.now
        let lost = try await setup.store.claim(
            owner: "dead", limit: 100, now: now, leaseUntil: now.addingTimeInterval(60))
        #expect(lost.first?.deliveries.count == 100)
        // The live sender takes the other 200 at once, and the dead one's after its lease.
        #expect(try await setup.dispatcher.dispatchOnce() == 200)
        clock.advance(by: 59)
        #expect(try await setup.dispatcher.dispatchOnce() == 0)
        clock.advance(by: 2)
        #expect(try await setup.dispatcher.dispatchOnce() == 100)
        #expect(try await setup.store.queueDepth() == 0)
        #expect(Set(setup.server.requests.map(\.path)) == Set(tokens.map { "/3/device/\($0)" }))
        #expect(setup.server.requests.count == 300)
        // The dead sender's late outcome changes nothing: the claim is no longer its own.
        let late = DeliveryOutcome(
            notificationID: "n1", position: 0, token: tokens[0], app: "com.example.app", status: 400,
            reason: "BadDeviceToken")
        #expect(try await setup.store.complete([late], owner: "dead", now: Date()) == 0)
        #expect(try await setup.store.progress(of: "n1")?.deliveries.allSatisfy { $0.status == 200 } == true)
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func twoLiveSendersOnOneQueueNeverClaimTheSameDeviceSend(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let tokens = (0..<4_000).map { String(format: "%064x", $0 + 1) }
        for (index, part) in [tokens[..<2_000], tokens[2_000...]].enumerated() {
            let request = try NotificationRequest(body: Array(Self.alert(to: Array(part)).utf8), maximumDevices: 5000)
            let queued = QueuedNotification(
                id: "n\(index)", keyName: "app", pushType: "alert", app: "com.example.app",
                storedJSON: request.storedJSON,
                tokens: Array(part), createdAt: Date())
            #expect(try await setup.store.enqueue(queued, maximumQueueDepth: 10_000) == .accepted)
        }
        let connector = AnyConnector(setup.connector)
        let claimed = try await setup.queue.withSecondStore { second in
            // Two instances, each with its own store (its own connections for PostgreSQL), small batches.
            var configuration = Dispatcher.Configuration()
            configuration.claimBatch = 100
            configuration.instance = "a"
            let a = Dispatcher(
                store: setup.store, connector: connector, configuration: configuration, logger: Logger(label: "a"))
            configuration.instance = "b"
            let b = Dispatcher(
                store: second, connector: connector, configuration: configuration, logger: Logger(label: "b"))
            async let byA = Self.drain(a)
            async let byB = Self.drain(b)
            return try await (byA, byB)
        }
        #expect(claimed.0 + claimed.1 == 4_000)
        #expect(claimed.0 > 0 && claimed.1 > 0, "both instances took work: \(claimed)")
        var perToken: [String: Int] = [:]
        for request in setup.server.requests { perToken[request.path, default: 0] += 1 }
        #expect(perToken.count == 4_000)
        #expect(
            perToken.values.allSatisfy { $0 == 1 }, "\(perToken.values.filter { $0 > 1 }.count) device-sends sent twice"
        )
        #expect(try await setup.store.queueDepth() == 0)
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func aLiveActivityUpdateIsBroadcastToItsChannel(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let channel = try await ChannelManager(setup.connector).create(
            bundleID: "com.example.app", storagePolicy: .noMessageStored)
        let key = setup.key
        let body =
            #"{"push-type":"liveactivity","bundle-id":"com.example.app","event":"update","content-state":{"score":3},"timestamp":1700000000,"channel":"\#(channel.id)"}"#
        let id = try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: Self.bearer(key), body: ByteBuffer(string: body)
            ) { response in
                #expect(response.status == .accepted)
                let text = String(buffer: response.body)
                #expect(text.hasPrefix(#"{"channel":"\#(channel.id)","id":""#))
                return String(text.dropFirst(#"{"channel":"\#(channel.id)","id":""#.count).prefix(36))
            }
        }
        #expect(try await setup.dispatcher.dispatchOnce() == 1)
        let sent = try #require(setup.server.requests.last)
        #expect(sent.path == "/4/broadcasts/apps/com.example.app")
        #expect(sent[header: "apns-channel-id"] == channel.id)
        #expect(sent.bodyText == #"{"aps":{"content-state":{"score":3},"timestamp":1700000000,"event":"update"}}"#)
        try await setup.client { client in
            try await client.execute(uri: "/v1/notifications/\(id)", method: .get, headers: Self.bearer(key)) {
                response in
                let text = String(buffer: response.body)
                #expect(text.contains(#""deliveries":[{"apns-id":""#))
                #expect(text.contains(#""channel":"\#(channel.id)","state":"accepted","status":200}]"#))
            }
        }
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func keysAreListedWithoutSecretsAndARevokedKeyIsRefused(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend, limits: { $0.keyCacheLifetime = .zero })
        let keys = try await setup.store.apiKeys()
        #expect(keys.map(\.name) == ["app", "other"])
        #expect(keys.map(\.apps) == [["com.example.app"], ["com.other.app"]])
        #expect(keys.allSatisfy { $0.hash.count == 64 && $0.hash != setup.key && $0.hash != setup.otherKey })
        let otherKey = setup.otherKey
        let before = try await setup.client { client in
            try await client.execute(uri: "/v1/unregistered", method: .get, headers: Self.bearer(otherKey)) {
                $0.status
            }
        }
        #expect(before == .ok)
        #expect(try await setup.store.revokeAPIKey(name: "other"))
        #expect(try await setup.store.revokeAPIKey(name: "other") == false)
        let after = try await setup.client { client in
            try await client.execute(uri: "/v1/unregistered", method: .get, headers: Self.bearer(otherKey)) {
                $0.status
            }
        }
        #expect(after == .unauthorized)
        #expect(try await setup.store.apiKeys().map(\.name) == ["app"])
        try await setup.stop()
    }

    /// Dispatches until nothing is due; returns how many device-sends it claimed.
    static func drain(_ dispatcher: Dispatcher) async throws -> Int {
        var total = 0
        while true {
            let claimed = try await dispatcher.dispatchOnce()
            if claimed == 0 { return total }
            total += claimed
        }
    }
}
