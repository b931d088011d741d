import APNs
import APNsGateway
import APNsMockServer
import APNsTesting
import Foundation
import Logging
import Testing

/// What was accepted is delivered or expires, never burned: the dispatcher through an APNs outage
/// and server errors, on a real store and a mock APNs taken away and brought back on its port.
/// (When it pauses and probes is ``UpstreamPause``'s decision, checked with given instants in
/// `UpstreamPauseTests`; these tests wait for what the dispatcher reports, not for a clock.)
@Suite(.timeLimit(.minutes(2))) struct OutageTests {
    /// A mock APNs that can be stopped and started again on the same port, with the same
    /// authority, and a token connector to it.
    struct Peer {
        var configuration: MockAPNsServer.Configuration
        let connector: TokenConnector

        static func start() async throws -> (Peer, MockAPNsServer) {
            let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
            let authority = try MockCertificateAuthority()
            var configuration = MockAPNsServer.Configuration(signingKeys: [key])
            configuration.certificateAuthority = authority
            configuration.strict = true
            let server = try await MockAPNsServer.start(configuration)
            configuration.port = server.port
            var transport = TransportConfiguration()
            transport.trustedCertificateAuthority = .pem(authority.certificatePEM)
            let connector = try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
                environment: .custom(host: server.host, port: server.port), transport: transport)
            return (Peer(configuration: configuration, connector: connector), server)
        }

        /// Stops `server` and keeps its port from every other test meanwhile (a socket bound to it
        /// and not listening: a connection to it is refused, as to a host that is down).
        func takeAway(_ server: MockAPNsServer) async throws -> Int32 {
            try await server.stop()
            #if os(Linux)
                let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                let held = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            var yes: Int32 = 1
            setsockopt(held, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(configuration.port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(held, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(bound == 0, "the port \(configuration.port) could not be held: errno \(errno)")
            return held
        }

        /// Brings APNs back on its port.
        func bringBack(_ held: Int32) async throws -> MockAPNsServer {
            close(held)
            return try await MockAPNsServer.start(configuration)
        }
    }

    static let paused = "sending paused: APNs cannot be reached; device-sends wait without spending attempts"
    static let stillPaused = "still paused: the probe met the same cause"
    static let resumed = "sending resumed: APNs answered"

    static func dispatcher(
        _ store: any GatewayStore, _ connector: TokenConnector, _ reports: AwaitableReports,
        adjust: (inout Dispatcher.Configuration) -> Void = { _ in }
    ) -> Dispatcher {
        var configuration = Dispatcher.Configuration()
        configuration.pollInterval = .milliseconds(100)
        configuration.lease = .seconds(40)
        adjust(&configuration)
        return Dispatcher(
            store: store, connector: AnyConnector(connector), configuration: configuration, logger: reports.logger,
            metricsFactory: reports.metrics)
    }

    static func accepted(_ reports: AwaitableReports) -> Int64 {
        reports.counter("apns_gateway_device_sends_total", ["result": "accepted"])
    }

    /// The issue's case, its outage shortened to three pauses: 300 device-sends queued while APNs
    /// is unreachable, then 300 more meeting 503 with `Retry-After` on APNs' first 400 requests.
    /// Every one is accepted once; none failed, none spent an attempt on the outage.
    @Test(arguments: Backend.allCases)
    func whatWasQueuedThroughAnOutageAndServerErrorsIsAllDelivered(_ backend: Backend) async throws {
        let (peer, first) = try await Peer.start()
        let held = try await peer.takeAway(first)
        let queue = try await TestStore(backend)
        try await LeaseTests.enqueue(devices: 300, on: queue.store, id: "before")
        let reports = AwaitableReports()
        let dispatcher = Self.dispatcher(queue.store, peer.connector, reports)
        let running = Task { try await dispatcher.run() }
        dispatcher.wake()

        await reports.until { $0.lines(Self.stillPaused).count >= 2 }
        let notice = try #require(reports.lines(Self.paused).first)
        #expect(notice.level == .warning)
        #expect(notice.metadata["cause"]?.description == "unreachable")
        #expect(reports.lines(Self.paused).count == 1, "said once per outage")
        guard case .paused(.unreachable, _) = dispatcher.status else {
            Issue.record("readiness says \(dispatcher.status) during the outage")
            return
        }
        let waiting = try #require(try await queue.store.progress(of: "before")).deliveries
        #expect(waiting.allSatisfy { $0.state != "done" && $0.attempts == 0 }, "\(waiting.prefix(2))")
        #expect(Self.accepted(reports) == 0)

        let second = try await peer.bringBack(held)
        second.inject(.respond(status: 503, retryAfter: 1, body: #"{"reason":"ServiceUnavailable"}"#), requests: 400)
        try await LeaseTests.enqueue(devices: 300, on: queue.store, id: "after", firstToken: 301)
        dispatcher.wake()
        await reports.until { LeaseTests.finished($0) >= 600 }
        #expect(
            Self.accepted(reports) == 600, "\(reports.logs.entries.suffix(10).map { "\($0.message) \($0.metadata)" })")

        for id in ["before", "after"] {
            let deliveries = try #require(try await queue.store.progress(of: id)).deliveries
            let odd = deliveries.filter { $0.state != "done" || $0.status != 200 }
            #expect(odd.isEmpty, "\(odd.prefix(3))")
            // The outage and APNs' 503s spent no attempt: the one that counts is the one accepted.
            #expect(deliveries.allSatisfy { $0.attempts == 1 }, "\(deliveries.filter { $0.attempts != 1 }.prefix(3))")
        }
        var acceptedPerPath: [String: Int] = [:]
        for request in second.requests where request.status == 200 { acceptedPerPath[request.path, default: 0] += 1 }
        #expect(acceptedPerPath.count == 600)
        #expect(acceptedPerPath.values.allSatisfy { $0 == 1 })
        // The first answers were APNs' 503s: the pause took them for a server error and waited
        // out their Retry-After.
        #expect(reports.lines(Self.stillPaused).contains { $0.metadata["cause"]?.description == "server-error" })
        #expect(reports.counter("apns_gateway_device_sends_total", ["result": "failed"]) == 0)
        #expect(!reports.lines(Self.resumed).isEmpty)
        #expect(dispatcher.status == .sending)
        running.cancel()
        _ = await running.result
        await peer.connector.shutdown(gracePeriod: .zero)
        try await second.stop()
        await queue.remove()
    }

    /// A notification past its expiration is never sent; one whose expiration passes while APNs
    /// is unreachable is finished as expired, not sent, and not failed.
    @Test func expiredNotificationsAreFinishedWithoutBeingSent() async throws {
        let (peer, server) = try await Peer.start()
        let queue = try await TestStore(.sqlite)
        let past = Int(Date().timeIntervalSince1970) - 60
        try await LeaseTests.enqueue(devices: 3, on: queue.store, id: "stale", expiration: past)
        let reports = AwaitableReports()
        let dispatcher = Self.dispatcher(queue.store, peer.connector, reports)
        let running = Task { try await dispatcher.run() }
        dispatcher.wake()
        await reports.until { $0.counter("apns_gateway_device_sends_total", ["result": "expired"]) >= 3 }
        let stale = try #require(try await queue.store.progress(of: "stale")).deliveries
        #expect(stale.allSatisfy { $0.state == "done" && $0.errorKind == "expired" && $0.delivery == "not-sent" })
        #expect(
            stale.first?.message
                == "not sent: the notification expired (at \(past) UNIX seconds) before it could be sent")
        #expect(server.requests.isEmpty)
        #expect(stale.allSatisfy { $0.attempts == 0 })

        // Unreachable, with an expiration two seconds away: it waits, then expires.
        let held = try await peer.takeAway(server)
        defer { close(held) }
        let soon = Int(Date().timeIntervalSince1970) + 2
        try await LeaseTests.enqueue(devices: 3, on: queue.store, id: "soon", expiration: soon, firstToken: 10)
        dispatcher.wake()
        await reports.until { $0.counter("apns_gateway_device_sends_total", ["result": "expired"]) >= 6 }
        let expired = try #require(try await queue.store.progress(of: "soon")).deliveries
        #expect(expired.allSatisfy { $0.state == "done" && $0.errorKind == "expired" && $0.delivery == "not-sent" })
        #expect(expired.allSatisfy { $0.attempts == 0 }, "waiting out an outage spends no attempt")
        #expect(reports.counter("apns_gateway_device_sends_total", ["result": "failed"]) == 0)
        running.cancel()
        _ = await running.result
        await peer.connector.shutdown(gracePeriod: .zero)
        await queue.remove()
    }

    /// A failure of the device-send's own (429 TooManyRequests for its token) spends an attempt
    /// each time; after the last it is final, reported with APNs' answer.
    @Test func aDeviceSendsOwnFailuresSpendItsAttempts() async throws {
        let (peer, server) = try await Peer.start()
        let queue = try await TestStore(.sqlite)
        server.inject(.respond(status: 429, retryAfter: nil, body: #"{"reason":"TooManyRequests"}"#))
        try await LeaseTests.enqueue(devices: 1, on: queue.store, id: "busy")
        let reports = AwaitableReports()
        let dispatcher = Self.dispatcher(queue.store, peer.connector, reports) {
            $0.maximumAttempts = 2
            $0.retry = .none
        }
        let running = Task { try await dispatcher.run() }
        dispatcher.wake()
        await reports.until { $0.counter("apns_gateway_device_sends_total", ["result": "rejected"]) >= 1 }
        let delivery = try #require(try await queue.store.progress(of: "busy")?.deliveries.first)
        #expect(delivery.state == "done")
        #expect(delivery.status == 429)
        #expect(delivery.reason == "TooManyRequests")
        #expect(delivery.attempts == 2)
        #expect(reports.counter("apns_gateway_device_sends_total", ["result": "requeued"]) == 1)
        #expect(reports.lines(Self.paused).isEmpty, "a device's own failure pauses nothing")
        running.cancel()
        _ = await running.result
        await peer.connector.shutdown(gracePeriod: .zero)
        try await server.stop()
        await queue.remove()
    }
}
