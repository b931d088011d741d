import APNs
import APNsMockServer
import Foundation
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// Connectors as swift-service-lifecycle services: graceful shutdown drains, cancellation does not
/// wait, and a ServiceGroup stops them on SIGTERM.
@Suite(.serialized) struct ServiceLifecycleTests {
    static let shutDownNotSent = APNsError.transport(
        TransportError(kind: .shutDown, delivery: .notSent, message: "the connector's transport was shut down"))

    @Test func gracefulShutdownDrainsInFlightSends() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.delay(.milliseconds(300)))
            let connector = try fixture.tokenConnector()
            try await testGracefulShutdown { trigger in
                let service = Task { try await connector.run() }
                let inFlight = Task {
                    try await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                }
                // received; its answer waits 300 ms
                try #require(await Poll.until { fixture.server.faultsApplied > 0 })
                let triggered = ContinuousClock.now
                trigger.triggerGracefulShutdown()
                try await service.value  // returns once drained: the answer comes 300 ms after the request arrived
                #expect(ContinuousClock.now - triggered > .milliseconds(150))
                // not a poll later
                #expect(ContinuousClock.now - triggered < Duration.milliseconds(900).scaledForSanitizers)
                #expect(try await inFlight.value.status == 200)
            }
            await #expect(throws: Self.shutDownNotSent) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("late") }, via: connector, to: .test)
            }
        }
    }

    @Test func gracePeriodComesFromTheTransportConfiguration() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.neverAnswer)
            let connector = try fixture.certificateConnector(shutdownGracePeriod: .milliseconds(200))
            let id = APNsID()
            let stuck = Task {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: connector, to: .test)
            }
            try #require(await Poll.until { fixture.server.processedCount(apnsID: id.description) > 0 })
            let start = ContinuousClock.now
            try await testGracefulShutdown { trigger in
                let service = Task { try await connector.run() }
                trigger.triggerGracefulShutdown()
                try await service.value
            }
            #expect(ContinuousClock.now - start < .seconds(2) * sanitizerSlowdown)
            await #expect(
                throws: APNsError.transport(
                    TransportError(
                        kind: .shutDown, delivery: .unknown, message: "the connector's transport was shut down"))
            ) {
                try await stuck.value
            }
        }
    }

    @Test func cancellationShutsDownWithoutWaiting() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.neverAnswer)
            let connector = try fixture.tokenConnector()
            let id = APNsID()
            let stuck = Task {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: connector, to: .test)
            }
            try #require(await Poll.until { fixture.server.processedCount(apnsID: id.description) > 0 })
            // Cancelled before `run()` waits or while it does, it shuts down with no grace period.
            let service = Task { try await connector.run() }
            let start = ContinuousClock.now
            service.cancel()
            try await service.value
            #expect(ContinuousClock.now - start < .seconds(1) * sanitizerSlowdown)
            await #expect(throws: APNsError.self) { try await stuck.value }
        }
    }

    /// Whether SIGTERM still has its default action (terminate).
    static func sigtermIsDefault() -> Bool {
        var current = sigaction()
        sigaction(SIGTERM, nil, &current)
        return current.__sigaction_handler.sa_handler == nil  // SIG_DFL
    }

    /// The way a server runs it: in a ServiceGroup that turns SIGTERM into a graceful shutdown.
    @Test func serviceGroupStopsTheConnectorOnSIGTERM() async throws {
        try await Fixture.with { fixture in
            // Longer than a loaded machine takes from the request's arrival to the signal.
            fixture.server.inject(.delay(.seconds(3)))
            let connector = try fixture.tokenConnector()
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: connector)], gracefulShutdownSignals: [.sigterm],
                    logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
            let running = Task { try await group.run() }
            let inFlight = Task {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            // received; its answer waits 3 s
            try #require(await Poll.until { fixture.server.faultsApplied > 0 })
            // Signal only once the group has taken SIGTERM over (its default action ends the process).
            try #require(await Poll.until { !Self.sigtermIsDefault() })
            let signalled = ContinuousClock.now
            kill(getpid(), SIGTERM)
            try await running.value
            #expect(ContinuousClock.now - signalled > .milliseconds(100))  // it waited for the delayed answer
            #expect(try await inFlight.value.status == 200)
            await #expect(throws: Self.shutDownNotSent) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("late") }, via: connector, to: .test)
            }
        }
    }
}
