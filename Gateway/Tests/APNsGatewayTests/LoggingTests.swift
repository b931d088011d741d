@testable import APNsGateway
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// What an operator's log pipeline reads: JSON lines with sorted keys, and an access log of one
/// line per request that names the API key but never carries it, a token or a body.
@Suite struct LoggingTests {
    @Test func aLogLineIsOneJSONObjectWithSortedKeys() {
        let line = JSONLogHandler.line(
            label: "apns-gateway", level: .warning, message: "paused \"team-a\"",
            metadata: [
                "credential": "team-a", "cause": .stringConvertible(42), "list": ["a", .dictionary(["b": "c"])],
            ],
            source: "APNsGateway", at: Date(timeIntervalSince1970: 1_796_580_000.125))
        #expect(
            line
                == #"{"label":"apns-gateway","level":"warning","message":"paused \"team-a\"","metadata":{"cause":"42","credential":"team-a","list":["a",{"b":"c"}]},"source":"APNsGateway","time":"2026-12-06T18:00:00.125Z"}"#
                + "\n")
    }

    @Test func theAccessLogNamesTheKeyAndCarriesNoSecret() async throws {
        let lines = Mutex<[String]>([])
        var handler = JSONLogHandler(label: "apns-gateway.access") { line in lines.withLock { $0.append(line) } }
        handler.logLevel = .info
        let setup = try await GatewayAPITests.Setup.start(.sqlite)
        var configuration = GatewayAPI.Configuration()
        configuration.accessLogger = Logger(label: "apns-gateway.access", factory: { _ in handler })
        let api = GatewayAPI(store: setup.store, configuration: configuration, authenticationMethod: .token)
        try await Application(router: api.router()).test(.router) { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(setup.key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: [GatewayAPITests.token]))
            ) { response in #expect(response.status == .accepted) }
            try await client.execute(uri: "/v1/nothing", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
        let logged = lines.withLock { $0 }
        #expect(logged.count == 2)
        let objects = try logged.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let first = try #require(objects.first?["metadata"] as? [String: String])
        #expect(first["http.request.method"] == "POST" && first["url.path"] == "/v1/notifications")
        #expect(first["http.response.status_code"] == "202" && first["api_key.name"] == "app")
        #expect(first["duration_ms"].flatMap(Int.init) != nil)
        let second = try #require(objects.last?["metadata"] as? [String: String])
        #expect(second["http.response.status_code"] == "404" && second["api_key.name"] == nil)
        for line in logged {
            #expect(!line.contains(setup.key), "the key itself")
            #expect(!line.contains(GatewayAPITests.token), "a device token from the body")
            #expect(!line.lowercased().contains("bearer"))
        }
        try await setup.stop()
    }

    /// The trace context a notification was accepted under is what its claim reads back, on both
    /// backends: the instance that sends it continues the trace.
    @Test(arguments: Backend.allCases)
    func aNotificationKeepsItsTraceContextUntilItIsClaimed(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        for (id, parent) in [("traced", traceParent), ("untraced", nil)] as [(String, String?)] {
            #expect(
                try await queue.store.enqueueAlert(id: id, tokens: [GatewayAPITests.token], traceParent: parent)
                    == .accepted)
        }
        let claimed = try await queue.store.claim(owner: "a", limit: 10, now: Date() + 1, leaseUntil: Date() + 60)
        #expect(
            Dictionary(uniqueKeysWithValues: claimed.map { ($0.id, $0.traceParent ?? "none") }) == [
                "traced": traceParent, "untraced": "none",
            ])
        await queue.remove()
    }
}
