@testable import APNs
import APNsMockServer
import InMemoryLogging
import Logging
import MetricsTestKit
import Testing

/// APNs ties a connection to the key of its first push and answers a token of another key on it
/// 403 UnrelatedKeyIdInToken; Apple's remedy is a new connection (protocol reference, Responses).
/// The mock's `tiedToAnotherKey` fault plays such a connection. The connector writes nothing more
/// on it, closes it once what was written on it is answered, and sends each refused request once
/// more on a new connection; the circuit breaker does not count it against the credentials.
@Suite struct UnrelatedKeyTests {
    static let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("key") }

    struct Observed {
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        let connector: TokenConnector

        init(_ fixture: Fixture) throws {
            var logger = Logger(label: "apns-test", factory: { [logs] _ in logs })
            logger.logLevel = .info
            connector = try TokenConnector(
                teamID: fixture.signingKey.teamID, keyID: fixture.signingKey.keyID,
                key: .pem(fixture.signingKey.privateKeyPEM), environment: fixture.environment,
                transport: fixture.transport, clock: Fixture.tokenClock, logger: logger, metricsFactory: metrics)
            fixture.made.withLock { [connector] in $0.append(connector) }
        }

        var retirements: Int {
            logs.entries.filter {
                $0.message.description
                    == "APNs tied this connection to another key (UnrelatedKeyIdInToken); closing it once its requests are answered"
            }.count
        }

        var retries: Int64 {
            (try? metrics.expectCounter("apns.retries", [("apns.retry.reason", "unrelated_key")]).totalValue) ?? 0
        }
    }

    /// Concurrent single sends, all written on the tied connection: each is refused, sent once
    /// more on the one new connection, and accepted.
    @Test func sendsRefusedOnATiedConnectionGoOnceMoreOnANewOne() async throws {
        try await Fixture.with(adjust: { $0.recordsRequests = true }) { fixture in
            fixture.server.inject(.tiedToAnotherKey, connections: 1)
            let observed = try Observed(fixture)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await send(Self.notification, via: observed.connector, to: .test).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 20))
            let refused = fixture.server.requests.filter { $0.reason == "UnrelatedKeyIdInToken" }
            #expect(!refused.isEmpty)
            #expect(fixture.server.requests.filter { $0.status == 200 }.count == 20)
            #expect(fixture.server.requests.count == 20 + refused.count)
            #expect(Set(refused.map(\.remoteAddress)).count == 1, "refused on one connection")
            #expect(
                !fixture.server.requests.filter { $0.status == 200 }.contains {
                    $0.remoteAddress == refused.first?.remoteAddress
                })
            #expect(fixture.server.connectionCount == 2)
            #expect(observed.retirements == 1)
            #expect(observed.retries == Int64(refused.count))
        }
    }

    /// The bulk path does the same per device, and 100 refusals in a row do not open the circuit.
    @Test func aBulkSendOnATiedConnectionIsDeliveredWholeOnANewOne() async throws {
        try await Fixture.with(adjust: { $0.recordsRequests = true }) { fixture in
            fixture.server.inject(.tiedToAnotherKey, connections: 1)
            let observed = try Observed(fixture)
            let summary = try await send(Self.notification, via: observed.connector, to: BulkSendTests.devices(100))
            #expect(summary.accepted == 100)
            let refused = fixture.server.requests.filter { $0.reason == "UnrelatedKeyIdInToken" }.count
            #expect(refused >= 1)
            #expect(fixture.server.requests.count == 100 + refused)
            #expect(fixture.server.connectionCount == 2)
            #expect(observed.connector.circuitTrips == 0)
            #expect(observed.retirements == 1)
        }
    }

    /// When every connection is tied to another key, the send is refused after one more attempt on
    /// a new connection, and the error says so.
    @Test func aSecondRefusalEndsTheSendWithItsAdvice() async throws {
        try await Fixture.with(adjust: { $0.recordsRequests = true }) { fixture in
            fixture.server.inject(.tiedToAnotherKey)
            let observed = try Observed(fixture)
            let error = await #expect(throws: APNsError.self) {
                try await send(Self.notification, via: observed.connector, to: .test)
            }
            guard case .rejected(let rejection)? = error else {
                Issue.record("expected a rejection, got \(String(describing: error))")
                return
            }
            #expect(rejection.reason == .unrelatedKeyIdInToken)
            #expect(error?.retryAdvice == .onNewConnection)
            #expect(fixture.server.requests.map(\.status) == [403, 403])
            #expect(Set(fixture.server.requests.map(\.remoteAddress)).count == 2)
            #expect(fixture.server.connectionCount == 2)
            #expect(observed.retries == 1)
        }
    }
}
