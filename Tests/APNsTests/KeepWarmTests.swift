@testable import APNs
import APNsMockServer
import APNsTesting
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
/// No test here sleeps or reads the clock: each waits for what the connector reports (a connection
/// opened, a line logged; ``AwaitableReports``), and the suite's time limit ends a wait for something
/// that never happens. When keep-warm acts (its spacing, back-off and idle margin) is
/// `KeepWarmSchedule`'s decision, checked with given instants in `KeepWarmScheduleTests`; this
/// suite checks that the loop acts on it through libcurl; `LoopClockTests` that its back-off runs
/// on the connector's clock. The test that waits for libcurl's idle age, in real time, is in
/// ``RealTime``, which the serial tier runs alone.
///
/// Keep-warm needs libcurl 7.88 or later (``Libcurl/keepsAConnectionNothingWasWrittenOn``): the
/// tests of what it does run there, the test of what a connector does without it on older ones
/// (CI runs this suite against 7.88, 8.14 and Ubuntu 22.04's 7.81).
@Suite(.timeLimit(.minutes(1))) struct KeepWarmTests {
    static let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("warm") }

    /// Whether the loaded libcurl can keep a connection warm.
    static let libcurlKeepsWarm = (try? Libcurl.loaded.get())?.keepsAConnectionNothingWasWrittenOn ?? false
    static let needsKeepWarm = Testing.ConditionTrait.enabled(
        if: libcurlKeepsWarm, "keep-warm needs libcurl 7.88 or later")

    static let opened = "apns.connections.opened"

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
            let reports = AwaitableReports()
            let connector = try fixture.tokenConnector(reportingTo: reports)
            try await Self.running(connector) {
                await reports.until { $0.counter(Self.opened) >= 1 }
                #expect(connector.connectionsOpened == 1)
                #expect(fixture.server.connectionCount == 1)
                #expect(fixture.server.streamCount == 0)  // TLS and HTTP/2 set up; no request
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
            let reports = AwaitableReports()
            let connector = try fixture.certificateConnector(reportingTo: reports)
            try await Self.running(connector) {
                await reports.until { $0.counter(Self.opened) >= 1 }
                #expect(connector.connectionsOpened == 1)
                #expect(fixture.server.streamCount == 0)
                let response = try await send(Self.notification, via: connector, to: .test)
                #expect(response.status == 200)
                #expect(connector.connectionsOpened == 1)
            }
        }
    }

    /// libcurl does not watch idle connections; the connector does, and replaces one the server
    /// retired without waiting for a send to find it gone.
    @Test(needsKeepWarm) func aConnectionTheServerRetiresIsReplacedBeforeTheNextSend() async throws {
        try await Fixture.with { fixture in
            let reports = AwaitableReports()
            let connector = try fixture.tokenConnector(reportingTo: reports)
            try await Self.running(connector) {
                await reports.until { $0.counter(Self.opened) >= 1 }
                fixture.server.goAwayAll()
                await reports.until { $0.counter(Self.opened) >= 2 }
                #expect(connector.connectionsOpened == 2)
                #expect(fixture.server.connectionCount == 2)
                #expect(fixture.server.streamCount == 0)
                let response = try await send(Self.notification, via: connector, to: .test)
                #expect(response.status == 200)
                #expect(connector.connectionsOpened == 2)
            }
        }
    }

    /// On a libcurl older than 7.88 a connector asked to keep a connection warm opens none (the
    /// connection would be closed unused), says so once, and connects on its first send.
    @Test func withALibcurlTooOldForKeepWarmTheConnectorSaysSoAndTheFirstSendConnects() async throws {
        try await Fixture.with { fixture in
            let reports = AwaitableReports()
            let connector = try fixture.tokenConnector(reportingTo: reports)
            let off = reports.logs.entries.filter { $0.message.description.hasPrefix("APNs keep-warm is off") }
            try await Self.running(connector) {
                if Self.libcurlKeepsWarm {
                    await reports.until { $0.counter(Self.opened) >= 1 }
                    #expect(off.isEmpty)
                    #expect(connector.connectionsOpened == 1)
                } else {
                    // Said when the connector was made; `run()` then asks for no connection.
                    #expect(off.count == 1)
                    #expect(off.first?.level == .notice)
                    #expect(off.first?.metadata["apns.keep_warm.needs"]?.description == "libcurl 7.88.0")
                    #expect(!connector.engine.transport.keepsConnectionWarm)
                    #expect(connector.connectionsOpened == 0)
                }
                let response = try await send(Self.notification, via: connector, to: .test)
                #expect(response.status == 200)
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

    /// Turned off, keep-warm is not asked for (the connector says so once, at `debug`, when it is
    /// made: `run()` asks the transport for a warm connection only when it keeps one), and the first
    /// send connects.
    @Test func withKeepWarmOffTheFirstSendConnects() async throws {
        try await Fixture.with { fixture in
            let reports = AwaitableReports()
            let connector = try fixture.tokenConnector(reportingTo: reports, adjust: { $0.keepsConnectionWarm = false })
            let keepalive = reports.logs.entries.filter {
                $0.message.description.hasPrefix("APNs connection keepalive")
            }
            #expect(keepalive.count == 1)
            #expect(keepalive.first?.message.description.contains("; no keep-warm;") == true)
            #expect(!connector.engine.transport.keepsConnectionWarm)
            try await Self.running(connector) {
                let response = try await send(Self.notification, via: connector, to: .test)
                #expect(response.status == 200)
                #expect(connector.connectionsOpened == 1)
                #expect(fixture.server.connectionCount == 1)
            }
        }
    }
}

extension KeepWarmTests {
    /// libcurl's idle age, in real time, which a loaded machine would stretch past what the sends
    /// after it assume: the serial tier runs every suite named RealTime alone.
    @Suite(.serialized, .timeLimit(.minutes(1))) struct RealTime {
        /// libcurl will not reuse a connection idle for longer than `maximumIdleTime`; the connector
        /// replaces it just after that, so the next send still finds one ready.
        @Test(KeepWarmTests.needsKeepWarm) func anIdleConnectionIsReplacedBeforeItIsTooOldToReuse() async throws {
            try await Fixture.with { fixture in
                let reports = AwaitableReports()
                let connector = try fixture.tokenConnector(
                    reportingTo: reports, adjust: { $0.maximumIdleTime = .seconds(1) })
                try await KeepWarmTests.running(connector) {
                    await reports.until { $0.counter(KeepWarmTests.opened) >= 1 }
                    await reports.until { $0.counter(KeepWarmTests.opened) >= 2 }
                    // Replaced because it was too old, not before: the loop says so, idle a second past
                    // the limit.
                    let retired = reports.lines("APNs connection idle too long; closing it")
                    #expect(retired.count == 1)
                    #expect(retired.first?.metadata["apns.connection.replaced_by"]?.description == "keep-warm")
                    #expect(reports.counter("apns.connections.retired_idle") == 1)
                    #expect(fixture.server.streamCount == 0)
                    let response = try await send(KeepWarmTests.notification, via: connector, to: .test)
                    #expect(response.status == 200)
                    #expect(connector.connectionsOpened == 2)
                }
            }
        }
    }
}
