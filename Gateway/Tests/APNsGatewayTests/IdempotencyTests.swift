import APNsGateway
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// `Idempotency-Key` on `POST /v1/notifications` (the IETF HTTPAPI draft's semantics): a request
/// retried with the same key and body gets the first one's answer and queues nothing; the same key
/// with another body is a 422; keys belong to one API key and last as long as their notification.
@Suite struct IdempotencyTests {
    typealias Setup = GatewayAPITests.Setup
    static let devices = [GatewayAPITests.token, "ab" + String(repeating: "01", count: 31)]
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!

    static func headers(_ apiKey: String, idempotencyKey: String?) -> HTTPFields {
        var headers = GatewayAPITests.bearer(apiKey)
        if let idempotencyKey { headers[Self.idempotencyKey] = idempotencyKey }
        return headers
    }

    /// POSTs `body`; the status, the body and the `Idempotent-Replayed` header of the answer.
    static func post(
        _ client: any TestClientProtocol, apiKey: String, idempotencyKey: String?, body: String
    ) async throws -> (status: HTTPResponse.Status, body: String, replayed: String?) {
        try await client.execute(
            uri: "/v1/notifications", method: .post, headers: headers(apiKey, idempotencyKey: idempotencyKey),
            body: ByteBuffer(string: body)
        ) { response in
            (response.status, String(buffer: response.body), response.headers[HTTPField.Name("Idempotent-Replayed")!])
        }
    }

    /// The `id` of a 202's body.
    static func id(_ body: String) -> String? {
        guard let start = body.range(of: #""id":""#) else { return nil }
        return String(body[start.upperBound...].prefix(36))
    }

    @Test(arguments: Backend.allCases)
    func aRetriedPostGetsTheFirstAnswerAndEachDeviceOneSend(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let key = setup.key
        let body = GatewayAPITests.alert(to: Self.devices)
        let (first, second) = try await setup.client { client in
            let first = try await Self.post(client, apiKey: key, idempotencyKey: #""retry-1""#, body: body)
            let second = try await Self.post(client, apiKey: key, idempotencyKey: #""retry-1""#, body: body)
            return (first, second)
        }
        #expect(first.status == .accepted)
        #expect(first.replayed == nil)
        let id = try #require(Self.id(first.body))
        #expect(first.body == #"{"devices":2,"id":"\#(id)"}"#)
        #expect(second.status == .accepted)
        #expect(second.body == first.body)
        #expect(second.replayed == "true")
        #expect(try await setup.store.queueDepth() == 2)
        #expect(try await setup.dispatcher.dispatchOnce() == 2)
        #expect(try await setup.dispatcher.dispatchOnce() == 0)
        #expect(setup.server.requests.map(\.path).sorted() == Self.devices.map { "/3/device/\($0)" }.sorted())
        // Once sent, a retry still gets the first answer, and sends nothing.
        let third = try await setup.client { client in
            try await Self.post(client, apiKey: key, idempotencyKey: #""retry-1""#, body: body)
        }
        #expect(third.body == first.body)
        #expect(third.replayed == "true")
        #expect(try await setup.store.queueDepth() == 0)
        try await setup.stop()
    }

    /// Requests with one key that arrive together store one notification between them, on
    /// PostgreSQL through the unique index that makes the later insert wait for the first.
    @Test(arguments: Backend.allCases)
    func concurrentRetriesStoreOneNotification(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let key = setup.key
        let body = GatewayAPITests.alert(to: Self.devices)
        let answers = try await setup.client { client in
            try await withThrowingTaskGroup(of: (HTTPResponse.Status, String, String?).self) { group in
                for _ in 0..<8 {
                    group.addTask { try await Self.post(client, apiKey: key, idempotencyKey: "together", body: body) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(answers.allSatisfy { $0.0 == .accepted })
        #expect(Set(answers.map { Self.id($0.1) }).count == 1)
        #expect(answers.filter { $0.2 == nil }.count == 1)
        #expect(try await setup.store.queueDepth() == 2)
        try await setup.stop()
    }

    @Test(arguments: Backend.allCases)
    func theSameKeyWithAnotherBodyIsRefusedAndQueuesNothing(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let key = setup.key
        let (first, other) = try await setup.client { client in
            let first = try await Self.post(
                client, apiKey: key, idempotencyKey: "k", body: GatewayAPITests.alert(to: Self.devices))
            let other = try await Self.post(
                client, apiKey: key, idempotencyKey: "k", body: GatewayAPITests.alert(to: [GatewayAPITests.token]))
            return (first, other)
        }
        let id = try #require(Self.id(first.body))
        #expect(other.status == .unprocessableContent)
        #expect(
            other.body
                == #"{"detail":"the Idempotency-Key was given before with another body (notification \#(id)); a new notification needs a new key, a retry the same body","field":"Idempotency-Key","status":422,"title":"Unprocessable Content","type":"about:blank"}"#
        )
        #expect(try await setup.store.queueDepth() == 2)
        try await setup.stop()
    }

    /// Two API keys may choose the same idempotency key; a request without one is never a retry;
    /// a key is forgotten with its notification (the retention), and then makes a new one.
    @Test(arguments: Backend.allCases)
    func keysBelongToOneAPIKeyAndLastAsLongAsTheirNotification(_ backend: Backend) async throws {
        let setup = try await Setup.start(backend)
        let key = setup.key
        let otherKey = setup.otherKey
        let body = GatewayAPITests.alert(to: [GatewayAPITests.token])
        let otherBody = GatewayAPITests.alert(to: [GatewayAPITests.token], app: "com.other.app")
        let ids = try await setup.client { client in
            [
                try await Self.post(client, apiKey: key, idempotencyKey: "shared", body: body),
                try await Self.post(client, apiKey: otherKey, idempotencyKey: "shared", body: otherBody),
                try await Self.post(client, apiKey: key, idempotencyKey: nil, body: body),
                try await Self.post(client, apiKey: key, idempotencyKey: nil, body: body),
            ].map { Self.id($0.body) }
        }
        #expect(Set(ids).count == 4)
        #expect(try await setup.store.queueDepth() == 4)
        #expect(try await setup.dispatcher.dispatchOnce() == 4)
        #expect(try await setup.store.deleteFinished(before: Date().addingTimeInterval(60), limit: 100) == 4)
        let again = try await setup.client { client in
            try await Self.post(client, apiKey: key, idempotencyKey: "shared", body: body)
        }
        #expect(again.status == .accepted)
        #expect(again.replayed == nil)
        #expect(Self.id(again.body) != ids[0])
        try await setup.stop()
    }

    /// The header is a Structured Fields string (`"…"`, escapes `\"` and `\\`) or the same
    /// characters bare; anything else is a 400 that says what to send, and queues nothing.
    @Test func aMalformedKeyIsA400() async throws {
        let setup = try await Setup.start(.sqlite)
        let key = setup.key
        let body = GatewayAPITests.alert(to: [GatewayAPITests.token])
        let refusal =
            #"{"detail":"the Idempotency-Key header is not one key: give Idempotency-Key: \"<1 to 255 printable ASCII characters>\", a new one for each notification","field":"Idempotency-Key","status":400,"title":"Bad Request","type":"about:blank"}"#
        let malformed = [
            #""""#, #""open"#, #""a"b""#, #""a\nb""#, "two words", String(repeating: "k", count: 256), "é",
        ]
        let answers = try await setup.client { client in
            var answers: [(HTTPResponse.Status, String, String?)] = []
            for value in malformed {
                answers.append(try await Self.post(client, apiKey: key, idempotencyKey: value, body: body))
            }
            // Two fields are two keys.
            var twice = GatewayAPITests.bearer(key)
            twice.append(HTTPField(name: Self.idempotencyKey, value: "a"))
            twice.append(HTTPField(name: Self.idempotencyKey, value: "b"))
            answers.append(
                try await client.execute(
                    uri: "/v1/notifications", method: .post, headers: twice, body: ByteBuffer(string: body)
                ) { ($0.status, String(buffer: $0.body), nil) })
            // Escaped and bare forms of one key are one key.
            let escaped = try await Self.post(client, apiKey: key, idempotencyKey: #""a\"b\\c""#, body: body)
            let bare = try await Self.post(client, apiKey: key, idempotencyKey: #"a"b\c"#, body: body)
            let quoted = try await Self.post(client, apiKey: key, idempotencyKey: #""plain""#, body: body)
            let unquoted = try await Self.post(client, apiKey: key, idempotencyKey: "plain", body: body)
            #expect(escaped.0 == .accepted)
            #expect(bare.0 == .badRequest, "a bare key has no quote in it")
            #expect(quoted.0 == .accepted)
            #expect(unquoted.2 == "true")
            #expect(Self.id(unquoted.1) == Self.id(quoted.1))
            return answers
        }
        for (index, answer) in answers.enumerated() {
            #expect(answer.0 == .badRequest, "\(index)")
            #expect(answer.1 == refusal, "\(index)")
        }
        #expect(try await setup.store.queueDepth() == 2)
        try await setup.stop()
    }
}
