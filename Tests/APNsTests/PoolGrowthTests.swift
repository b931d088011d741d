@testable import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// When the pool adds a connection and takes it away, as a value: given slow spells, the demand
/// and the time, never a clock or a socket.
@Suite struct PoolGrowthTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int((seconds * 1000).rounded())) }

    @Test func aSlowSpellAddsAConnectionUpToTheAdditionalOnes() {
        var growth = PoolGrowth(base: 1, additional: 1)
        #expect(growth.connections == 1)
        #expect(growth.slowSpellBegan(at: at(0)) == .add(connections: 2))
        #expect(growth.connections == 2)
        #expect(growth.slowSpellBegan(at: at(5)) == nil)  // the most it may carry
        #expect(growth.connections == 2)

        var three = PoolGrowth(base: 2, additional: 2)
        #expect(three.slowSpellBegan(at: at(0)) == .add(connections: 3))
        #expect(three.slowSpellBegan(at: at(3)) == .add(connections: 4))
        #expect(three.slowSpellBegan(at: at(6)) == nil)
    }

    @Test func noAdditionalConnectionsKeepsThePoolAsConfigured() {
        var growth = PoolGrowth(base: 1, additional: 0)
        #expect(growth.slowSpellBegan(at: at(0)) == nil)
        #expect(growth.pass(demand: 0, streamsPerConnection: 1000, at: at(100)) == nil)
        #expect(growth.connections == 1)
    }

    /// The added connection stays while the demand needs it, and goes once the demand has fit one
    /// connection fewer for ten seconds in a row; a pass that needs it again starts the count anew.
    @Test func theAddedConnectionGoesOnceTheDemandFitsOneFewerForTenSeconds() {
        var growth = PoolGrowth(base: 1, additional: 1)
        _ = growth.slowSpellBegan(at: at(0))
        #expect(growth.pass(demand: 2_060, streamsPerConnection: 1000, at: at(30)) == nil)
        #expect(growth.pass(demand: 1_000, streamsPerConnection: 1000, at: at(31)) == nil)  // fits from here
        #expect(growth.pass(demand: 10, streamsPerConnection: 1000, at: at(40.9)) == nil)
        #expect(growth.pass(demand: 1_001, streamsPerConnection: 1000, at: at(40.95)) == nil)  // needs it again
        #expect(growth.pass(demand: 0, streamsPerConnection: 1000, at: at(41)) == nil)  // fits from here
        #expect(growth.pass(demand: 0, streamsPerConnection: 1000, at: at(50.9)) == nil)
        #expect(growth.pass(demand: 0, streamsPerConnection: 1000, at: at(51)) == .retire(connections: 1))
        #expect(growth.connections == 1)
        #expect(growth.pass(demand: 0, streamsPerConnection: 1000, at: at(80)) == nil)  // never below the base
    }

    /// Added connections go one at a time, each after its own ten seconds.
    @Test func addedConnectionsGoOneAtATime() {
        var growth = PoolGrowth(base: 1, additional: 2)
        _ = growth.slowSpellBegan(at: at(0))
        _ = growth.slowSpellBegan(at: at(1))
        #expect(growth.connections == 3)
        #expect(growth.pass(demand: 0, streamsPerConnection: 100, at: at(2)) == nil)
        #expect(growth.pass(demand: 0, streamsPerConnection: 100, at: at(12)) == .retire(connections: 2))
        #expect(growth.pass(demand: 0, streamsPerConnection: 100, at: at(13)) == nil)
        #expect(growth.pass(demand: 0, streamsPerConnection: 100, at: at(23)) == .retire(connections: 1))
    }

    /// After one is taken away, a slow spell adds none for a minute: no connection opened and
    /// closed every few seconds by a demand that rises and falls.
    @Test func aRetiredConnectionComesBackNoSoonerThanAMinuteLater() {
        var growth = PoolGrowth(base: 1, additional: 1)
        _ = growth.slowSpellBegan(at: at(0))
        _ = growth.pass(demand: 0, streamsPerConnection: 1000, at: at(1))
        #expect(growth.pass(demand: 0, streamsPerConnection: 1000, at: at(11)) == .retire(connections: 1))
        #expect(growth.slowSpellBegan(at: at(30)) == nil)
        #expect(growth.slowSpellBegan(at: at(70.9)) == nil)
        #expect(growth.slowSpellBegan(at: at(71)) == .add(connections: 2))
    }

    /// The timing is the connector's: a test may shorten it.
    @Test func theTimingIsGiven() {
        var growth = PoolGrowth(
            base: 1, additional: 1, timing: .init(retireAfter: .milliseconds(200), regrowAfter: .seconds(1)))
        _ = growth.slowSpellBegan(at: at(0))
        _ = growth.pass(demand: 0, streamsPerConnection: 10, at: at(1))
        #expect(growth.pass(demand: 0, streamsPerConnection: 10, at: at(1.2)) == .retire(connections: 1))
        #expect(growth.slowSpellBegan(at: at(2.1)) == nil)
        #expect(growth.slowSpellBegan(at: at(2.2)) == .add(connections: 2))
    }
}

extension PoolGrowthTests {
    /// A pool's slow spell through libcurl and the mock server, the judgement's thresholds lowered so
    /// that any second of busy streams is slow: it needs two real seconds of every stream busy,
    /// which a loaded machine can stretch, so the serial tier runs it alone.
    @Suite struct RealTime {
        static let alert = AlertNotification(bundleID: Fixture.bundleID) { Alert("Late") }

        /// Ten streams to a server answering 50 ms late, every busy second slow: a second connection
        /// is added and carries half the requests; every device is sent once; once nothing is in
        /// flight for half a second, the added connection is closed, and the next send goes on
        /// the one left (no new connection). Logged and counted both ways.
        @Test func aSlowPoolAddsAConnectionAndRetiresItWhenTheDemandFalls() async throws {
            try await Fixture.with { fixture in
                fixture.server.inject(.delay(.milliseconds(50)))
                let reports = AwaitableReports()
                let connector = try fixture.tokenConnector(reportingTo: reports) {
                    $0.maximumConcurrentStreams = 10
                    $0.additionalConnectionsWhenSlow = 1
                    $0.poolJudgement.slowFactor = 0
                    $0.poolJudgement.retireAfter = .milliseconds(500)
                }
                #expect(connector.concurrencyLimit == 20)  // the added connection's streams counted
                let summary = try await send(Self.alert, via: connector, to: BulkSendTests.devices(1_500))
                #expect(summary.accepted == 1_500)
                #expect(connector.slowCycles == 1)
                #expect(connector.connectionsAdded == 1)
                #expect(fixture.server.connectionCount == 2)
                let paths = Dictionary(grouping: fixture.server.requests.map(\.path), by: { $0 })
                #expect(paths.count == 1_500)
                #expect(paths.values.allSatisfy { $0.count == 1 })
                let perConnection = Dictionary(grouping: fixture.server.requests, by: { $0.remoteAddress ?? "" })
                #expect(perConnection.count == 2)
                #expect(reports.counter("apns.pool.connections_added") == 1)
                let notice = reports.logs.entries.filter {
                    $0.message.description.hasSuffix("(additionalConnectionsWhenSlow)")
                }
                #expect(notice.count == 1)
                #expect(notice.first?.level == .notice)
                #expect(notice.first?.metadata["apns.pool.connections"] == "1")
                #expect(notice.first?.metadata["apns.pool.connections_now"] == "2")

                let retired = await Poll.until(within: .seconds(30)) {
                    connector.connectionsRetired == 1 && fixture.server.openConnectionCount == 1
                }
                #expect(retired)
                #expect(reports.counter("apns.pool.connections_retired") == 1)
                #expect(
                    reports.lines(
                        "APNs demand fits fewer connections again; closing the one added while slow once its requests are answered"
                    ).count == 1)
                _ = try await send(Self.alert, via: connector, to: .test)
                #expect(fixture.server.connectionCount == 2)
                #expect(connector.connectionsOpened == 2)
            }
        }

        /// The same spell with no connections to add: noticed and counted, the notice says what
        /// would help, and the pool stays one connection.
        @Test func aPoolWithNoneToAddOnlyNotices() async throws {
            try await Fixture.with { fixture in
                fixture.server.inject(.delay(.milliseconds(50)))
                let reports = AwaitableReports()
                let connector = try fixture.tokenConnector(reportingTo: reports) {
                    $0.maximumConcurrentStreams = 10
                    $0.poolJudgement.slowFactor = 0
                }
                #expect(connector.concurrencyLimit == 10)
                let summary = try await send(Self.alert, via: connector, to: BulkSendTests.devices(600))
                #expect(summary.accepted == 600)
                #expect(connector.slowCycles == 1)
                #expect(connector.connectionsAdded == 0)
                #expect(fixture.server.connectionCount == 1)
                #expect(reports.counter("apns.pool.slow_cycles") == 1)
                let notice = reports.logs.entries.filter { $0.message.description.hasSuffix("would send more") }
                #expect(notice.count == 1)
                #expect(notice.first?.metadata["apns.pool.connections_now"] == "1")
            }
        }
    }
}
