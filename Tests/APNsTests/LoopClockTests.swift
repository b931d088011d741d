@testable import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// The transport's loop decides on the connector's clock (`TransportConfiguration.waitClock`): a
/// send's deadline, and keep-warm's spacing and back-off, pass when the test advances the clock,
/// and the loop, woken by the jump, acts at once. No real second is waited for; libcurl's own
/// timers (its connect and transfer timeouts) stay real and are longer than these tests take.
@Suite(.timeLimit(.minutes(1))) struct LoopClockTests {
    /// Moves `clock` on by `step` at a time until `condition` holds, and returns how far it moved:
    /// the test sees what the loop did, not the instant of its last reading. Nil if `condition`
    /// still fails after 30 s of real time.
    static func advance(
        _ clock: ManualWaitClock, by step: Duration, until condition: () -> Bool
    ) async -> Duration? {
        var moved = Duration.zero
        let held = await Poll.until(within: .seconds(30), every: .milliseconds(50)) {
            if condition() { return true }
            clock.advance(by: step)
            moved += step
            return false
        }
        return held ? moved : nil
    }

    /// How `task`'s send failed in the transport, if it did.
    static func outcome(_ task: Task<APNsResponse, any Error>) async -> TransportError? {
        guard case .failure(APNsError.transport(let failure)) = await task.result else { return nil }
        return failure
    }

    /// One connection of one stream to a server that never answers: the first send is written and
    /// waits in libcurl, the second waits in the loop's queue. Each ends, timed out, when the clock
    /// passes its deadline: the queued one not sent, the written one perhaps delivered.
    @Test func deadlinesPassOnTheConnectorsClock() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.neverAnswer)
            let clock = ManualWaitClock()
            let connector = try fixture.tokenConnector(reportingTo: AwaitableReports()) {
                $0.waitClock = WaitClockReference(clock)
                $0.maximumConnectionsPerHost = 1
                $0.maximumConcurrentStreams = 1
            }
            let (writtenID, queuedID) = (APNsID(), APNsID())
            let started = ContinuousClock.now
            let ended = Locked(0)
            let written = Task {
                defer { ended.withLock { $0 += 1 } }
                return try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: writtenID) { Alert("clock") }, via: connector,
                    to: .test, timeout: .seconds(300))
            }
            #expect(await fixture.server.arrivals(count: 1, within: .seconds(30)))
            let queued = Task {
                defer { ended.withLock { $0 += 1 } }
                return try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: queuedID) { Alert("clock") }, via: connector,
                    to: .test, timeout: .seconds(200))
            }
            // The queued send's deadline counts from when it was made, which the test cannot see:
            // the clock moves on a minute at a time until both have ended.
            let moved = try #require(await Self.advance(clock, by: .seconds(60)) { ended.withLock { $0 } == 2 })
            let queuedFailure = await Self.outcome(queued)
            #expect(queuedFailure?.kind == .timeout)
            #expect(queuedFailure?.delivery == .notSent)
            let writtenFailure = await Self.outcome(written)
            #expect(writtenFailure?.kind == .timeout)
            #expect(writtenFailure?.delivery == .unknown)
            #expect(moved >= .seconds(300))  // the written send's deadline
            // Far less than either deadline in real time: they passed on the connector's clock.
            #expect(ContinuousClock.now - started < .seconds(100))
            #expect(fixture.server.processedCount(apnsID: writtenID.description) == 1)
            #expect(fixture.server.processedCount(apnsID: queuedID.description) == 0)  // never written
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// The server goes away: keep-warm's attempt fails, is logged once at `notice`, and the next
    /// waits for its back-off on the connector's clock (`KeepWarmScheduleTests` checks its length);
    /// once the server is back on its port and the clock has passed the back-off, a connection is
    /// open again, before any send.
    @Test(KeepWarmTests.needsKeepWarm) func keepWarmBacksOffOnTheConnectorsClock() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: Fixture.keyID)
        let authority = try MockCertificateAuthority()
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.certificateAuthority = authority
        let first = try await MockAPNsServer.start(configuration)
        configuration.port = first.port
        let reports = AwaitableReports()
        let clock = ManualWaitClock()
        var transport = TransportConfiguration(trustedCertificateAuthority: .pem(authority.certificatePEM))
        transport.waitClock = WaitClockReference(clock)
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: first.host, port: first.port), transport: transport,
            logger: reports.logger, metricsFactory: reports.metrics)
        let failed = "APNs connection could not be opened ahead of sends; trying again"
        try await KeepWarmTests.running(connector) {
            await reports.until { $0.counter(KeepWarmTests.opened) >= 1 }
            try await first.stop()
            // Past the spacing between two warm-ups, the loop tries again once it finds the
            // connection gone.
            try #require(
                await Self.advance(clock, by: KeepWarmSchedule.spacing) { !reports.lines(failed).isEmpty } != nil)
            let notice = try #require(reports.lines(failed).first)
            #expect(notice.level == .notice)
            #expect(notice.metadata["error.type"]?.description == "connect")
            let backOff = try #require(notice.metadata["apns.keep_warm.retry_ms"].flatMap { Double("\($0)") })
            let second = try await MockAPNsServer.start(configuration)
            // Not before the back-off has passed on the connector's clock (from the failure, which
            // may have come a step before the test saw it).
            let moved = try #require(
                await Self.advance(clock, by: KeepWarmSchedule.spacing) {
                    reports.counter(KeepWarmTests.opened) >= 2
                })
            #expect(moved >= .milliseconds(backOff) - KeepWarmSchedule.spacing, "back-off \(backOff) ms")
            #expect(backOff >= 800)  // the first: a second, times a jitter of 0.8...1.2
            #expect(connector.connectionsOpened == 2)
            let attempts = reports.lines(failed)
            #expect(attempts.filter { $0.level == .notice }.count == 1)  // later failures are at debug
            #expect(attempts.dropFirst().allSatisfy { $0.level == .debug })
            #expect(second.streamCount == 0)
            let response = try await send(KeepWarmTests.notification, via: connector, to: .test)
            #expect(response.status == 200)
            #expect(connector.connectionsOpened == 2)
            try await second.stop()
        }
    }
}
