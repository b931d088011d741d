@_spi(Benchmarks) @testable import APNs
import APNsMockServer
import APNsTesting
import Foundation
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing
import Tracing

/// Logs, metrics and spans of real sends through libcurl to the mock server: what an operator
/// sees when a push is accepted, rejected, refused by GOAWAY, or when the circuit opens.
@Suite(.serialized) struct ObservabilityTests {
    /// A logger at `trace` into an in-memory handler, a test metrics factory and a tracer.
    struct Backends {
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        var logger: Logger {
            var logger = Logger(label: "apns-test", factory: { [logs] _ in logs })
            logger.logLevel = .trace
            return logger
        }

        func entries(_ message: String) -> [InMemoryLogHandler.Entry] {
            logs.entries.filter { $0.message.description == message }
        }

        func sends(
            _ pushType: String, _ outcome: String, _ status: String, reason: String = "none", error: String = "none"
        ) throws -> Int64 {
            try metrics.expectCounter(
                "apns.sends",
                [
                    ("apns.push_type", pushType), ("apns.outcome", outcome), ("http.response.status_code", status),
                    ("apns.reason", reason), ("error.type", error),
                ]
            ).totalValue
        }
    }

    func tokenConnector(
        _ fixture: Fixture, _ backends: Backends, adjust: (inout TransportConfiguration) -> Void = { _ in }
    ) throws -> TokenConnector {
        var transport = fixture.transport
        adjust(&transport)
        return try TokenConnector(
            teamID: fixture.signingKey.teamID, keyID: fixture.signingKey.keyID,
            key: .pem(fixture.signingKey.privateKeyPEM),
            environment: fixture.environment, transport: transport, logger: backends.logger,
            metricsFactory: backends.metrics)
    }

    static let rejectedDevice = try! Device(token: "ab" + String(repeating: "cd", count: 31))

    @Test func acceptedAndRejectedSendsAreLoggedCountedAndTraced() async throws {
        try await Fixture.with { fixture in
            let backends = Backends()
            let connector = try tokenConnector(fixture, backends)
            fixture.server.reject(deviceToken: Self.rejectedDevice.token, with: .badDeviceToken)
            let id = APNsID()
            try await withTracer(backends.tracer) {
                let response = try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("hi") }, via: connector, to: .test
                )
                #expect(response.apnsID == id)
                await #expect(throws: APNsError.self) {
                    try await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("hi") }, via: connector,
                        to: Self.rejectedDevice)
                }
            }

            // Metrics: one table of names (the Observability article); bounded dimensions only.
            #expect(try backends.sends("alert", "accepted", "200") == 1)
            #expect(try backends.sends("alert", "rejected", "400", reason: "BadDeviceToken") == 1)
            #expect(
                try backends.metrics.expectTimer("apns.send.duration", [("apns.push_type", "alert")]).values.count == 2)
            #expect(
                try backends.metrics.expectTimer("apns.send.duration", [("apns.push_type", "alert")]).values.allSatisfy
                {
                    $0 > 0
                })
            #expect(try backends.metrics.expectMeter("apns.sends.in_flight").values == [1, 0, 1, 0])
            #expect(try backends.metrics.expectCounter("apns.tokens.minted").totalValue == 1)
            #expect(try backends.metrics.expectCounter("apns.connections.opened").totalValue == 1)
            #expect(try backends.metrics.expectMeter("apns.connections.open").lastValue == 1)

            // Logs: lifecycle at info, each send at debug with a token prefix, the whole token at trace only.
            let minted = backends.entries("APNs provider token minted")
            #expect(minted.count == 1)
            #expect(minted.first?.level == .info)
            #expect(minted.first?.metadata["apns.key_id"] == "\(Fixture.keyID)")
            let established = backends.entries("APNs connection established (TLS, HTTP/2)")
            #expect(established.count == 1)
            #expect(established.first?.level == .info)
            #expect(established.first?.metadata["server.address"] == "127.0.0.1")
            #expect(established.first?.metadata["server.port"] == "\(fixture.server.port)")
            let accepted = try #require(backends.entries("APNs accepted the push").first)
            #expect(accepted.level == .debug)
            #expect(accepted.metadata["apns.push_type"] == "alert")
            #expect(accepted.metadata["apns.topic"] == "\(Fixture.bundleID)")
            #expect(accepted.metadata["apns.id"] == "\(id)")
            #expect(accepted.metadata["http.response.status_code"] == "200")
            #expect(accepted.metadata["apns.device"] == "00fc13ad…")
            #expect(accepted.metadata["apns.duration_ms"] != nil)
            let rejected = try #require(backends.entries("APNs rejected the push").first)
            #expect(rejected.level == .debug)
            #expect(rejected.metadata["apns.reason"] == "BadDeviceToken")
            #expect(rejected.metadata["http.response.status_code"] == "400")
            #expect(rejected.metadata["apns.device"] == "abcdcdcd…")
            // A whole device token appears at trace and nowhere else.
            for entry in backends.logs.entries where "\(entry.metadata)".contains(Device.test.token) {
                #expect(entry.level == .trace, "\(entry.message)")
            }
            #expect(
                backends.entries("Sending APNs push").first?.metadata["apns.device_token"] == "\(Device.test.token)")

            // Spans: one client span per send, with what happened.
            let spans = backends.tracer.finishedSpans.filter { $0.operationName == "apns.send" }
            #expect(spans.count == 2)
            #expect(spans.allSatisfy { $0.kind == .client })
            #expect(spans.first?.attributes.get("apns.push_type") == .string("alert"))
            #expect(spans.first?.attributes.get("apns.topic") == .string(Fixture.bundleID))
            #expect(spans.first?.attributes.get("apns.id") == .string(id.description))
            #expect(spans.first?.attributes.get("http.response.status_code") == .int64(200))
            #expect(spans.first?.attributes.get("apns.retries") == .int64(0))
            #expect(spans.first?.status == nil)
            #expect(spans.last?.attributes.get("http.response.status_code") == .int64(400))
            #expect(spans.last?.attributes.get("apns.reason") == .string("BadDeviceToken"))
            #expect(spans.last?.attributes.get("error.type") == .string("BadDeviceToken"))
            #expect(spans.last?.status?.code == .error)
        }
    }

    /// GOAWAY with a lower last-stream-id while requests are in flight: the GOAWAY is logged with
    /// its code and counted, refused streams are sent again (counted as retries), a new connection
    /// is opened, and every send is accepted.
    /// A send refused before any I/O is counted (`apns.outcome` `invalid`, the rule as its reason)
    /// and logged at debug; nothing reaches the server.
    @Test func refusalsBeforeSendingAreCountedAndLogged() async throws {
        try await Fixture.with { fixture in
            let backends = Backends()
            let connector = try tokenConnector(fixture, backends)
            let long = String(repeating: "x", count: 5_000)
            await #expect(throws: APNsError.validation(.payloadTooLarge(pushType: .alert, size: 5_020, limit: 4096))) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert(long) }, via: connector, to: .test)
            }
            await #expect(throws: APNsError.validation(.apnsIDInBulkSend)) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: APNsID()) { Alert("x") }, via: connector,
                    to: [Device.test])
            }
            await #expect(throws: APNsError.validation(.invalidTimeout(.zero))) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: AnyConnector(connector),
                    to: .test,
                    timeout: .zero)
            }
            #expect(try backends.sends("alert", "invalid", "none", reason: "payloadTooLarge", error: "validation") == 1)
            #expect(
                try backends.sends("alert", "invalid", "none", reason: "apnsIDInBulkSend", error: "validation") == 1)
            #expect(try backends.sends("alert", "invalid", "none", reason: "invalidTimeout", error: "validation") == 1)
            let refused = backends.entries("APNs push refused before sending")
            #expect(refused.count == 3)
            #expect(refused.allSatisfy { $0.level == .debug && $0.metadata["apns.outcome"] == "invalid" })
            #expect(refused.allSatisfy { $0.metadata["apns.push_type"] == "alert" })
            #expect(fixture.server.streamCount == 0)
            await connector.shutdown()
        }
    }

    @Test func goAwayAndReconnectAreLoggedAndCounted() async throws {
        try await Fixture.with(adjust: { $0.goAwayAfterStreams = 20 }) { fixture in
            let backends = Backends()
            let connector = try tokenConnector(fixture, backends)
            let summary = try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector,
                to: (0..<100).map { try! Device(tokenBytes: [UInt8(1), UInt8($0)] + Array(repeating: 7, count: 30)) })
            // (libcurl 7.88 rarely reports a refusal as a bare CURLE_HTTP2: delivery unknown; see GoAwayTests.)
            #expect(summary.accepted + summary.deliveryUnknown == 100 && summary.accepted >= 97, "\(summary)")
            let logged = backends.entries(
                "APNs sent GOAWAY: the connection takes no new streams; later requests go on a new connection")
            // libcurl before 7.88 reports no GOAWAY: there only the new connections show it.
            let goaways: Int64
            if try Libcurl.loaded.get().reportsGoAway {
                goaways = try backends.metrics.expectCounter("apns.goaways").totalValue
                #expect(goaways >= 1)
            } else {
                goaways = (try? backends.metrics.expectCounter("apns.goaways").totalValue) ?? 0
                #expect(goaways == 0)
            }
            #expect(logged.count == Int(goaways))
            #expect(
                logged.allSatisfy {
                    $0.level == .notice && $0.metadata["http2.error_code"] == "0"
                        && $0.metadata["http2.last_stream_id"] != nil
                })
            let opened = try backends.metrics.expectCounter("apns.connections.opened").totalValue
            #expect(opened >= 2)
            #expect(backends.entries("APNs connection established (TLS, HTTP/2)").count == Int(opened))
            #expect(backends.entries("APNs connection closed").count >= 1)
            #expect(try backends.sends("alert", "accepted", "200") == Int64(summary.accepted))
        }
    }

    /// A bulk send has one span with the counts, and each device is counted like a single send.
    @Test func bulkSendHasOneSpanAndPerDeviceMetrics() async throws {
        try await Fixture.with { fixture in
            let backends = Backends()
            let connector = try tokenConnector(fixture, backends)
            fixture.server.reject(deviceToken: Self.rejectedDevice.token, with: .unregistered)
            let devices =
                (0..<30).map { try! Device(tokenBytes: [UInt8(2), UInt8($0)] + Array(repeating: 9, count: 30)) } + [
                    Self.rejectedDevice
                ]
            let summary = try await withTracer(backends.tracer) {
                try await send(BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: devices)
            }
            #expect(summary.accepted == 30 && summary.rejected == 1)
            let spans = backends.tracer.finishedSpans
            #expect(spans.map(\.operationName) == ["apns.bulk_send"])
            #expect(spans.first?.attributes.get("apns.push_type") == .string("background"))
            #expect(spans.first?.attributes.get("apns.bulk.accepted") == .int64(30))
            #expect(spans.first?.attributes.get("apns.bulk.rejected") == .int64(1))
            #expect(spans.first?.attributes.get("apns.bulk.cancelled") == .bool(false))
            #expect(try backends.sends("background", "accepted", "200") == 30)
            #expect(try backends.sends("background", "rejected", "410", reason: "Unregistered") == 1)
            #expect(
                try backends.metrics.expectTimer("apns.send.duration", [("apns.push_type", "background")]).values.count
                    == 31)
            #expect(try backends.metrics.expectMeter("apns.sends.in_flight").lastValue == 0)
            #expect(backends.entries("APNs accepted the push").count == 30)
            #expect(backends.entries("APNs bulk send finished").first?.metadata["apns.bulk.rejected"] == "1")
        }
    }

    /// Failed connections open the circuit: logged at notice and counted; failures counted by kind.
    @Test func circuitTripIsLoggedAndCounted() async throws {
        let backends = Backends()
        var transport = TransportConfiguration()
        transport.circuitBreaker = CircuitBreakerPolicy(failureThreshold: 2, initialCoolDown: .seconds(30))
        let key = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: Fixture.keyID)
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: 1), transport: transport, logger: backends.logger,
            metricsFactory: backends.metrics)
        for _ in 0..<3 {
            await #expect(throws: APNsError.self) {
                try await send(BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: .test)
            }
        }
        #expect(try backends.metrics.expectCounter("apns.circuit.trips").totalValue == 1)
        let opened = backends.entries("APNs circuit breaker opened: failing sends at once until a probe succeeds")
        #expect(opened.count == 1)
        #expect(opened.first?.level == .notice)
        #expect(try backends.sends("background", "failed", "none", error: "connect") == 2)
        #expect(try backends.sends("background", "failed", "none", error: "circuit-open") == 1)
        let failed = backends.entries("APNs push failed")
        #expect(failed.count == 3)
        #expect(failed.allSatisfy { $0.metadata["apns.delivery"] == "not-sent" })
    }

    /// At `trace`, with every event above: no log line, metadata value, error or span attribute
    /// contains the JWT, the signing key, the client key, its passphrase or the certificate.
    @Test func noSecretReachesLogsOrSpans() async throws {
        try await Fixture.with(adjust: { $0.goAwayAfterStreams = 5 }) { fixture in
            let backends = Backends()
            let token = try tokenConnector(fixture, backends)
            let passphrase = "correct horse battery staple"
            let encrypted = try TestCredentials.encryptPrivateKey(
                pem: fixture.client.privateKeyPEM, passphrase: passphrase)
            let certificate = try CertificateConnector(
                certificate: .pem(fixture.client.certificatePEM), privateKey: .pem(encrypted), passphrase: passphrase,
                environment: fixture.environment, transport: fixture.transport, logger: backends.logger,
                metricsFactory: backends.metrics)
            fixture.server.reject(deviceToken: Self.rejectedDevice.token, with: .badDeviceToken)
            try await withTracer(backends.tracer) {
                for index in 0..<12 {
                    let device = index % 3 == 0 ? Self.rejectedDevice : Device.test
                    _ = try? await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("n\(index)") }, via: token, to: device)
                    _ = try? await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("c\(index)") }, via: certificate,
                        to: device)
                }
                _ = try await send(
                    BackgroundNotification(bundleID: Fixture.bundleID), via: token,
                    to: [Device.test, Self.rejectedDevice])
            }
            let jwt = try token.bearerToken()
            var secrets = [jwt, String(jwt.split(separator: ".").last ?? ""), passphrase]
            for pem in [
                fixture.signingKey.privateKeyPEM, fixture.client.privateKeyPEM, encrypted,
                fixture.client.certificatePEM,
            ] {
                // Every base64 line of the PEM: any one of them in a log would be a leak.
                secrets += pem.split(separator: "\n").filter { !$0.hasPrefix("-----") && $0.count >= 16 }.map(
                    String.init)
            }
            var texts = backends.logs.entries.map {
                "\($0.level) \($0.message) \($0.metadata) \($0.error.map { "\($0)" } ?? "")"
            }
            for span in backends.tracer.finishedSpans {
                var text = span.operationName
                span.attributes.forEach { key, value in text += " \(key)=\(value)" }
                texts.append(text)
            }
            #expect(texts.count > 40)
            #expect(backends.logs.entries.contains { $0.level == .trace })
            for text in texts {
                for secret in secrets { #expect(!text.contains(secret), "a secret in: \(text.prefix(200))") }
            }
        }
    }
}
