import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// One error type to catch, with delivery and retry advice that are right for each failure.
@Suite struct ErrorModelTests {
    /// The catch pattern the docs show, compiled for real (a non-exhaustive typed catch that
    /// rethrows crashes Swift 6.3's SILGen; this exhaustive form does not).
    @Test func documentedCatchPattern() async {
        let connector = TokenRecordingConnector { _ in
            .rejected(.unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
        }
        var caught = ""
        do {
            try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test)
        } catch .rejected(let rejection) where rejection.reason == .unregistered {
            caught = "unregistered \(rejection.timestamp?.timeIntervalSince1970 ?? 0)"
        } catch .transport(let failure) where failure.delivery == .notSent {
            caught = "not sent"
        } catch {
            caught = error.description
        }
        #expect(caught == "unregistered 1700000000.0")
    }

    @Test func adviceAndDelivery() {
        let notSent = APNsError.transport(
            TransportError(kind: .connect, delivery: .notSent, curlCode: 7, message: "refused"))
        #expect(!notSent.mayHaveBeenDelivered)
        #expect(notSent.retryAdvice == .safe)
        #expect(
            notSent.description
                == "Transport failure (connect, curl 7): refused. The notification was not sent; sending it again cannot duplicate it. Nothing accepted the connection: check host, port and firewall (APNs also listens on 2197)."
        )
        let unknown = APNsError.transport(
            TransportError(kind: .connectionLost, delivery: .unknown, curlCode: 56, message: "reset"))
        #expect(unknown.mayHaveBeenDelivered)
        #expect(unknown.retryAdvice == .mayDuplicate)
        #expect(
            APNsError.transport(TransportError(kind: .cancelled, delivery: .unknown, message: "x")).retryAdvice
                == .never)
        let throttled = APNsError.rejected(
            APNsRejection(
                APNsHTTPResponse(
                    status: 429, headers: [.init(name: "retry-after", value: "30")],
                    body: Array(#"{"reason":"TooManyRequests"}"#.utf8))))
        #expect(throttled.retryAdvice == .afterDelay(.seconds(30)))
        #expect(!throttled.mayHaveBeenDelivered)
        #expect(APNsError.rejected(APNsRejection(status: 410, reason: .unregistered)).retryAdvice == .never)
        #expect(
            APNsError.rejected(APNsRejection(status: 403, reason: .expiredProviderToken)).retryAdvice
                == .afterRefreshingToken)
        #expect(
            APNsError.rejected(APNsRejection(status: 429, reason: .tooManyProviderTokenUpdates)).retryAdvice
                == .afterDelay(nil))
        #expect(
            APNsError.rejected(APNsRejection(status: 502, reason: nil)).retryAdvice == .withBackoff(retryAfter: nil))
        #expect(APNsError.validation(.emptyAlert).retryAdvice == .never)
    }

    @Test func invalidTimeoutsAndSettingsAreRejectedBeforeIO() async throws {
        let connector = TokenRecordingConnector()
        await #expect(throws: APNsError.validation(.invalidTimeout(.zero))) {
            try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test, timeout: .zero)
        }
        await #expect(throws: APNsError.validation(.invalidTimeout(.milliseconds(-5)))) {
            try await send(
                AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test, timeout: .milliseconds(-5)
            )
        }
        await #expect(throws: APNsError.validation(.invalidTimeout(.zero))) {
            try await send(
                AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: [Device.test], timeout: .zero)
        }
        #expect(connector.requests.isEmpty)
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        func make(_ transport: TransportConfiguration) throws {
            _ = try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: .sandbox,
                transport: transport)
        }
        let timeoutRange = "use 0.001 seconds to 24 hours (86400 seconds)"
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(name: "requestTimeout", value: "0.0 seconds; \(timeoutRange)"))
        ) { try make(TransportConfiguration(requestTimeout: .zero)) }
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(name: "maximumConcurrentStreams", value: "0; use 1 to 2147483647"))
        ) { try make(TransportConfiguration(maximumConcurrentStreams: 0)) }
        // Upper bounds: nothing a caller passes may overflow the transport's arithmetic.
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(
                    name: "requestTimeout", value: "\(Duration.seconds(Int64.max)); \(timeoutRange)"))
        ) { try make(TransportConfiguration(requestTimeout: .seconds(Int64.max))) }
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(name: "connectTimeout", value: "86401.0 seconds; \(timeoutRange)"))
        ) { try make(TransportConfiguration(connectTimeout: .seconds(86_401))) }
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(name: "maximumConnectionsPerHost", value: "\(Int.max); use 1 to 1000"))
        ) { try make(TransportConfiguration(maximumConnectionsPerHost: .max)) }
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(name: "maximumConcurrentStreams", value: "\(Int.max); use 1 to 2147483647"))
        ) { try make(TransportConfiguration(maximumConcurrentStreams: .max)) }
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(name: "additionalConnectionsWhenSlow", value: "-1; use 0 to 1000"))
        ) {
            var transport = TransportConfiguration()
            transport.additionalConnectionsWhenSlow = -1
            try make(transport)
        }
        #expect(throws: APNsError.self) { try make(TransportConfiguration(maximumIdleTime: .seconds(Int64.max))) }
        #expect(throws: APNsError.self) { try make(TransportConfiguration(tcpKeepAliveInterval: .seconds(1e12))) }
        #expect(throws: APNsError.self) { try make(TransportConfiguration(shutdownGracePeriod: .seconds(1e15))) }
        #expect(throws: APNsError.self) {
            try make(TransportConfiguration(circuitBreaker: CircuitBreakerPolicy(maximumCoolDown: .seconds(Int64.max))))
        }
        // The largest accepted values make a connector.
        try make(
            TransportConfiguration(
                requestTimeout: TransportConfiguration.maximumDuration, connectTimeout: .seconds(86_400),
                maximumConnectionsPerHost: 1_000, maximumConcurrentStreams: Int(Int32.max),
                maximumIdleTime: .seconds(86_400), tcpKeepAliveInterval: .seconds(86_400),
                shutdownGracePeriod: .seconds(86_400)))
    }

    /// A send timeout above 24 hours is refused before any I/O, never an overflow on the transport
    /// thread; one of exactly 24 hours is sent.
    @Test func hugeTimeoutsAreRefusedNotTrapped() async throws {
        let connector = TokenRecordingConnector()
        for timeout in [Duration.seconds(Int64.max), .seconds(86_400) + .nanoseconds(1), .seconds(1e16)] {
            await #expect(throws: APNsError.validation(.invalidTimeout(timeout))) {
                try await send(
                    AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test, timeout: timeout)
            }
        }
        #expect(connector.requests.isEmpty)
        try await send(
            AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test, timeout: .seconds(86_400))
        #expect(connector.requests.count == 1)
        await #expect(throws: APNsError.self) {
            try await send(
                AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: .test,
                retry: RetryPolicy(maximumAttempts: 2, maximumBackoff: .seconds(Int64.max)))
        }
        #expect(connector.requests.count == 1)
        // The bulk path checks the same range (it had its own check, without the ceiling).
        #expect(throws: APNsError.validation(.invalidTimeout(.seconds(Int64.max)))) {
            try bulkSendOutcomes(
                AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: [Device.test],
                timeout: .seconds(Int64.max))
        }
        #expect(connector.requests.count == 1)
        #expect(
            APNsValidationError.invalidTimeout(.seconds(Int64.max)).description
                == "The timeout \(Duration.seconds(Int64.max)) is not positive or is over 24 hours. Pass, for example, .seconds(10), or nil for the connector's default."
        )
    }

    /// A custom connector's own error arrives as a transport failure with unknown delivery: nothing
    /// says it was not sent.
    @Test func foreignErrorsBecomeUnknownTransportFailures() async {
        struct Broken: Error, CustomStringConvertible { var description: String { "socket on fire" } }
        final class Failing: Connector {
            typealias Authentication = TokenAuthentication
            func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse { throw Broken() }
        }
        do {
            try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: Failing(), to: .test)
            Issue.record("expected a failure")
        } catch {
            #expect(error == .transport(TransportError(kind: .other, delivery: .unknown, message: "socket on fire")))
        }
    }
}
