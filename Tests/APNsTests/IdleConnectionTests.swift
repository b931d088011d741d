@testable import APNs
import APNsMockServer
import APNsTesting
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// A connection left idle may go silent with TCP still open
/// (protocol reference, Hosts and connections): the mock's `silentAfterIdle` fault plays such a
/// peer, and no send is ever written to a connection idle for longer than `maximumIdleTime`.
///
/// These tests wait on the wall clock because the decision they check is libcurl's: it measures a
/// connection's idleness itself (`CURLOPT_MAXAGE_CONN`, whole seconds) and takes no clock. The
/// decisions that are the library's own (when keep-warm replaces an idle connection, once per idle
/// period) are values tested with given instants in `KeepWarmScheduleTests`. So the suite is in the
/// serial tier, its idle times are the shortest libcurl can measure, and the mock's silence comes
/// after the allowed idle time, as in the field.
@Suite(.serialized, .timeLimit(.minutes(5))) struct IdleConnectionTests {
    static let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("idle") }

    /// Leaves the connector idle for `duration`. Real time is the subject: how long a connection
    /// has been idle is libcurl's count (`maximumIdleTime`) and the mock's (its silence), both in
    /// real time, so the idle period has to pass.
    static func idle(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }

    struct Connector {
        let reports = AwaitableReports()
        let connector: TokenConnector

        init(_ fixture: Fixture, adjust: (inout TransportConfiguration) -> Void) throws {
            var transport = fixture.transport
            adjust(&transport)
            connector = try TokenConnector(
                teamID: fixture.signingKey.teamID, keyID: fixture.signingKey.keyID,
                key: .pem(fixture.signingKey.privateKeyPEM), environment: fixture.environment, transport: transport,
                logger: reports.logger, metricsFactory: reports.metrics)
        }

        /// The "closing it" lines, by what the closed connection made way for.
        func retirements(by replacer: String) -> [InMemoryLogHandler.Entry] {
            reports.logs.entries.filter {
                $0.message.description == "APNs connection idle too long; closing it"
                    && $0.metadata["apns.connection.replaced_by"]?.description == replacer
            }
        }

        var retiredCount: Int64 { reports.counter("apns.connections.retired_idle") }

        /// Returns once `count` connections have been opened.
        func opened(_ count: Int64) async { await reports.until { $0.counter("apns.connections.opened") >= count } }
    }

    /// What the mock's fault reproduces: a send on a connection that went silent while idle waits
    /// out its whole deadline and may have been delivered.
    @Test func aSilentIdleConnectionThatIsUsedCostsTheWholeDeadline() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.silentAfterIdle(.seconds(1)))
            let made = try Connector(fixture) {
                $0.maximumIdleTime = .seconds(60)
                $0.requestTimeout = .seconds(1)
            }
            #expect(try await send(Self.notification, via: made.connector, to: .test).status == 200)
            try await Self.idle(for: .milliseconds(2500))
            let error = await #expect(throws: APNsError.self) {
                try await send(Self.notification, via: made.connector, to: .test)
            }
            #expect(error.flatMap(transportFailure)?.kind == .timeout)
            #expect(error.flatMap(transportFailure)?.delivery == .unknown)
            #expect(made.connector.connectionsOpened == 1)
            await made.connector.shutdown()
        }
    }

    /// The same peer with the idle time allowed shorter than its silence: the next send goes on a
    /// new connection and is answered at once. Logged and counted once.
    @Test func aConnectionIdleTooLongIsClosedAndTheNextSendOpensOne() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.silentAfterIdle(.seconds(2)))
            let made = try Connector(fixture) { $0.maximumIdleTime = .seconds(1) }
            #expect(try await send(Self.notification, via: made.connector, to: .test).status == 200)
            try await Self.idle(for: .milliseconds(3500))
            let started = ContinuousClock.now
            #expect(try await send(Self.notification, via: made.connector, to: .test).status == 200)
            #expect(ContinuousClock.now - started < .seconds(2) * sanitizerSlowdown)
            #expect(made.connector.connectionsOpened == 2)
            let logged = made.retirements(by: "send")
            #expect(logged.count == 1)
            #expect(logged.first?.level == .info)
            #expect(logged.first?.metadata["apns.connection.count"] == "1")
            #expect(logged.first?.metadata["apns.connection.maximum_idle_s"] == "1")
            #expect(made.retiredCount == 1)
            await made.connector.shutdown()
        }
    }

    /// Kept warm, an idle connection is replaced when it has been idle too long — once per idle
    /// period: the replacement is not replaced in turn, and the next send, finding it idle too
    /// long as well, opens a new one and is answered at once.
    @Test(KeepWarmTests.needsKeepWarm) func keptWarmAnIdleConnectionIsReplacedOncePerIdlePeriod() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.silentAfterIdle(.seconds(2)))
            let made = try Connector(fixture) { $0.maximumIdleTime = .seconds(1) }
            let connector = made.connector
            try await KeepWarmTests.running(connector) {
                await made.opened(1)
                #expect(connector.connectionsOpened == 1)
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                // Replaced after the idle time and keep-warm's margin…
                await made.opened(2)
                #expect(connector.connectionsOpened == 2)
                #expect(made.retirements(by: "keep-warm").count == 1)
                // …and not again, though the replacement passes the idle time twice over.
                try await Self.idle(for: .milliseconds(4500))
                #expect(connector.connectionsOpened == 2)
                #expect(fixture.server.streamCount == 1)
                let started = ContinuousClock.now
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                #expect(ContinuousClock.now - started < .seconds(2) * sanitizerSlowdown)
                #expect(connector.connectionsOpened == 3)
                #expect(made.retirements(by: "send").count == 1)
                #expect(made.retiredCount == 2)
                // A send ended the idle period: the next one may replace its connection again.
                await made.opened(4)
                #expect(connector.connectionsOpened == 4)
            }
        }
    }

    /// The field's scale, with the default configuration: a peer silent on a connection after 20 s
    /// idle, and 150 s between two sends, plain and kept warm. It takes two and a half minutes, so
    /// it runs only when asked (`APNS_FIELD_SCALE=1 swift test --filter IdleConnectionTests`).
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["APNS_FIELD_SCALE"] != nil, "APNS_FIELD_SCALE=1 runs it"),
        arguments: [false, true])
    func atTheFieldsScaleTheSendAfterALongIdleIsAnsweredAtOnce(keptWarm: Bool) async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.silentAfterIdle(.seconds(20)))
            let made = try Connector(fixture) { _ in }
            let connector = made.connector
            let body = {
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                try await Self.idle(for: .seconds(150))
                let started = ContinuousClock.now
                #expect(try await send(Self.notification, via: connector, to: .test).status == 200)
                let took = ContinuousClock.now - started
                #expect(took < .seconds(2))
                print(
                    "kept warm: \(keptWarm); answered after \(took); connections opened: \(connector.connectionsOpened)"
                )
            }
            if keptWarm && KeepWarmTests.libcurlKeepsWarm {
                try await KeepWarmTests.running(connector, body)
            } else {
                try await body()
                await connector.shutdown()
            }
        }
    }
}
