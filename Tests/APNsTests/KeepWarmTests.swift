@testable import APNs
import APNsMockServer
import Foundation
import InMemoryLogging
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// A connector run as a service keeps a connection to APNs open and ready: before the first send,
/// after the server closes it, after the server was away, and before an idle one is too old to
/// reuse. Nothing is ever written on it but the sends.
///
/// Keep-warm needs libcurl 7.88 or later (``Libcurl/keepsAConnectionNothingWasWrittenOn``): the
/// tests of what it does run there, the test of what a connector does without it on older ones
/// (CI runs this suite against 7.88, 8.14 and Ubuntu 22.04's 7.81).
@Suite(.serialized) struct KeepWarmTests {
    static let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("warm") }

    /// Whether the loaded libcurl can keep a connection warm.
    static let libcurlKeepsWarm = (try? Libcurl.loaded.get())?.keepsAConnectionNothingWasWrittenOn ?? false
    static let needsKeepWarm = Testing.ConditionTrait.enabled(
        if: libcurlKeepsWarm, "keep-warm needs libcurl 7.88 or later")

    /// Polls `condition` every 10 ms; false if it does not hold within `limit`.
    static func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + limit * sanitizerSlowdown
        while !condition() {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Runs `connector` as a service around `body`, then shuts it down gracefully.
    static func running(_ connector: some Service, _ body: () async throws -> Void) async throws {
        try await testGracefulShutdown { trigger in
            let service = Task { try await connector.run() }
            try await body()
            trigger.triggerGracefulShutdown()
            try await service.value
        }
    }

    @Test(needsKeepWarm) func runOpensAConnectionBeforeTheFirstSendAndWritesNothingOnIt() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            try await Self.running(connector) {
                try #require(await Self.eventually(within: .seconds(5)) { connector.connectionsOpened == 1 })
                try await Task.sleep(for: .milliseconds(200))
                #expect(fixture.server.connectionCount == 1)
                #expect(fixture.server.streamCount == 0)  // TLS and HTTP/2 set up; no request
                #expect(connector.connectionsOpened == 1)  // one, not one per check
                let response = try await send(Self.notification, via: connector, to: .test)
                #expect(response.status == 200)
                #expect(connector.connectionsOpened == 1)  // the send went on the warm connection
                #expect(fixture.server.connectionCount == 1)
                #expect(fixture.server.requests.count == 1)
            }
        }
    }

    @Test(needsKeepWarm) func aCertificateConnectorIsKeptWarmToo() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            try await Self.running(connector) {
                try #require(await Self.eventually(within: .seconds(5)) { connector.connectionsOpened == 1 })
                #expect(fixture.server.streamCount == 0)
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                #expect(connector.connectionsOpened == 1)
            }
        }
    }

    /// libcurl does not watch idle connections; the connector does, and replaces one the server
    /// retired without waiting for a send to find it gone.
    @Test(needsKeepWarm) func aConnectionTheServerRetiresIsReplacedBeforeTheNextSend() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            try await Self.running(connector) {
                try #require(await Self.eventually(within: .seconds(5)) { connector.connectionsOpened == 1 })
                fixture.server.goAwayAll()
                try #require(await Self.eventually(within: .seconds(3)) { connector.connectionsOpened == 2 })
                #expect(fixture.server.connectionCount == 2)
                #expect(fixture.server.streamCount == 0)
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                #expect(connector.connectionsOpened == 2)
            }
        }
    }

    /// The server goes away: the failed attempt is logged once at `notice`, retried with back-off,
    /// and a connection is open again within the back-off once the server is back on its port.
    @Test(needsKeepWarm) func aServerThatWasAwayIsReconnectedToWhenItComesBack() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: Fixture.keyID)
        let authority = try MockCertificateAuthority()
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.certificateAuthority = authority
        let first = try await MockAPNsServer.start(configuration)
        configuration.port = first.port
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "apns-test", factory: { _ in logs })
        logger.logLevel = .debug
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: first.host, port: first.port),
            transport: TransportConfiguration(trustedCertificateAuthority: .pem(authority.certificatePEM)),
            logger: logger)
        let failed = "APNs connection could not be opened ahead of sends; trying again"
        try await Self.running(connector) {
            try #require(await Self.eventually(within: .seconds(5)) { connector.connectionsOpened == 1 })
            try await first.stop()
            let notices = { logs.entries.filter { $0.message.description == failed && $0.level == .notice } }
            try #require(await Self.eventually(within: .seconds(3)) { !notices().isEmpty })
            #expect(notices().first?.metadata["error.type"]?.description == "connect")
            let second = try await MockAPNsServer.start(configuration)
            let back = ContinuousClock.now
            // Back-off after the first failures: 1 s, then 2 s (±20 %).
            try #require(await Self.eventually(within: .seconds(5)) { connector.connectionsOpened == 2 })
            #expect(ContinuousClock.now - back < .seconds(5) * sanitizerSlowdown)
            #expect(notices().count == 1)  // later failures are at debug
            #expect(second.streamCount == 0)
            #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
            #expect(connector.connectionsOpened == 2)
            try await second.stop()
        }
    }

    /// libcurl will not reuse a connection idle for longer than `maximumIdleTime`; the connector
    /// replaces it just after that, so the next send still finds one ready.
    @Test(needsKeepWarm) func anIdleConnectionIsReplacedBeforeItIsTooOldToReuse() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector(adjust: { $0.maximumIdleTime = .seconds(1) })
            try await Self.running(connector) {
                try #require(await Self.eventually(within: .seconds(5)) { connector.connectionsOpened == 1 })
                let warmed = ContinuousClock.now
                try #require(await Self.eventually(within: .seconds(8)) { connector.connectionsOpened == 2 })
                #expect(ContinuousClock.now - warmed > .seconds(2))  // not before it was too old
                #expect(fixture.server.streamCount == 0)
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                #expect(connector.connectionsOpened == 2)
            }
        }
    }

    /// On a libcurl older than 7.88 a connector asked to keep a connection warm opens none (the
    /// connection would be closed unused), says so once, and connects on its first send.
    @Test func withALibcurlTooOldForKeepWarmTheConnectorSaysSoAndTheFirstSendConnects() async throws {
        try await Fixture.with { fixture in
            let logs = InMemoryLogHandler()
            let connector = try fixture.tokenConnector(loggingTo: logs)
            let off = logs.entries.filter { $0.message.description.hasPrefix("APNs keep-warm is off") }
            try await Self.running(connector) {
                try await Task.sleep(for: .milliseconds(300))
                if Self.libcurlKeepsWarm {
                    #expect(off.isEmpty)
                    #expect(connector.connectionsOpened == 1)
                } else {
                    #expect(off.count == 1)
                    #expect(off.first?.level == .notice)
                    #expect(off.first?.metadata["apns.keep_warm.needs"]?.description == "libcurl 7.88.0")
                    #expect(connector.connectionsOpened == 0)
                    #expect(fixture.server.connectionCount == 0)
                }
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                #expect(connector.connectionsOpened == 1)
                #expect(fixture.server.connectionCount == 1)
            }
        }
    }

    @Test func keepWarmNeedsLibcurl7_88() throws {
        let http2 = Int32(1 << 16)  // CURL_VERSION_HTTP2
        for (number, keeps) in [
            (UInt32(0x07_50_00), false), (0x07_51_00, false), (0x07_57_00, false), (0x07_58_00, true),
            (0x07_58_01, true), (0x08_0E_01, true),
        ] {
            #expect(try Libcurl(versionNumber: number, features: http2).keepsAConnectionNothingWasWrittenOn == keeps)
        }
    }

    @Test func withKeepWarmOffTheFirstSendConnects() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector(adjust: { $0.keepsConnectionWarm = false })
            try await Self.running(connector) {
                try await Task.sleep(for: .milliseconds(300))
                #expect(connector.connectionsOpened == 0)
                #expect(fixture.server.connectionCount == 0)
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                #expect(connector.connectionsOpened == 1)
            }
        }
    }
}
