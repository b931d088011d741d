import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// Shutdown, deadlines that count from the send, and bulk results that send once.
@Suite struct LifecycleTests {
    /// In-flight sends finish within the grace period; sends after shutdown fail at once, not sent.
    @Test func shutdownDrainsThenRefuses() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.delay(.milliseconds(300)))
            let connector = try fixture.tokenConnector()
            let inFlight = Task {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            #expect(await fixture.server.arrivals(count: 1, within: .seconds(60)))  // on the wire
            await connector.shutdown(gracePeriod: .seconds(5))
            #expect(try await inFlight.value.status == 200)
            await #expect(
                throws: APNsError.transport(
                    TransportError(
                        kind: .shutDown, delivery: .notSent, message: "the connector's transport was shut down"))
            ) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("late") }, via: connector, to: .test)
            }
            await connector.shutdown()  // a second call returns at once
        }
    }

    /// Past the grace period, what is still on the wire fails as shut down, delivery unknown.
    @Test func anyConnectorShutsDownWhatItWraps() async throws {
        try await Fixture.with { fixture in
            let wrapped = try fixture.tokenConnector()
            let connector = AnyConnector(wrapped)
            #expect(
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                    .status == 200)
            await connector.shutdown(gracePeriod: .seconds(1))
            await #expect(
                throws: APNsError.transport(
                    TransportError(
                        kind: .shutDown, delivery: .notSent, message: "the connector's transport was shut down"))
            ) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("late") }, via: wrapped, to: .test)
            }
        }
    }

    @Test func bulkResultsIterateOnce() async throws {
        let connector = TokenRecordingConnector()
        let results = try bulkSendOutcomes(
            AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: BulkSendTests.devices(5))
        var first = 0
        for try await _ in results { first += 1 }
        #expect(first == 5)
        await #expect(throws: APNsError.bulkResultsAlreadyIterated) {
            for try await _ in results {}
        }
        let copy = results
        var iterator = copy.makeAsyncIterator()
        await #expect(throws: APNsError.bulkResultsAlreadyIterated) { _ = try await iterator.next() }
        #expect(connector.requests.count == 5)
    }

    /// Cancelling a bulk send through the real transport starts nothing more: the server's count
    /// stops growing.
    @Test func cancelledBulkSendStartsNothingMore() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.delay(.milliseconds(50)))
            let connector = try fixture.tokenConnector()
            let task = Task {
                var read = 0
                for try await _ in try bulkSendOutcomes(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector,
                    to: BulkSendTests.devices(5_000), maximumInFlight: 50)
                {
                    read += 1
                }
                return read
            }
            // Cancelled once the send is under way: two rounds of 50 answered. The limit only bounds
            // a failure: with two test processes side by side on two cores (CI's libcurl stage) the
            // mock's event loop waits up to a second for the CPU, and a round of 50 took that long.
            try #require(await Poll.until(within: .seconds(120)) { fixture.server.streamCount >= 100 })
            task.cancel()
            let read = try await task.value
            let settled = await Poll.settled { fixture.server.streamCount }
            #expect(settled <= read + 50 + 50)
            #expect(settled < 5_000)
            await connector.shutdown(gracePeriod: .zero)
        }
    }
}

extension LifecycleTests {
    /// A grace period and a deadline as they pass, in real time through libcurl: the serial tier runs
    /// every suite named RealTime alone.
    @Suite struct RealTime {
        @Test func shutdownEndsWhatOutlivesTheGracePeriod() async throws {
            try await Fixture.with { fixture in
                fixture.server.inject(.neverAnswer)
                let connector = try fixture.tokenConnector()
                let stuck = Task {
                    try await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
                }
                #expect(await fixture.server.arrivals(count: 1, within: .seconds(30)))  // written: delivery unknown
                let start = ContinuousClock.now
                await connector.shutdown(gracePeriod: .milliseconds(200))
                #expect(ContinuousClock.now - start < .seconds(2))
                await #expect(
                    throws: APNsError.transport(
                        TransportError(
                            kind: .shutDown, delivery: .unknown, message: "the connector's transport was shut down"))
                ) {
                    try await stuck.value
                }
            }
        }

        /// A send waiting behind the stream limit has its deadline counted from when it was made.
        @Test func deadlineCountsFromTheSendNotFromTheWire() async throws {
            try await Fixture.with { fixture in
                fixture.server.inject(.neverAnswer)
                let connector = try fixture.tokenConnector(adjust: { $0.maximumConcurrentStreams = 1 })
                let blocker = Task {
                    try? await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("a") }, via: connector, to: .test,
                        timeout: .seconds(3))
                }
                #expect(await fixture.server.arrivals(count: 1, within: .seconds(30)))  // it holds the stream
                let start = ContinuousClock.now
                do throws(APNsError) {
                    try await send(
                        AlertNotification(bundleID: Fixture.bundleID) { Alert("b") }, via: connector, to: .test,
                        timeout: .milliseconds(300))
                    Issue.record("expected a timeout")
                } catch {
                    // It never got a stream: not sent, and it ended near its own deadline, not the blocker's.
                    #expect(
                        error
                            == .transport(
                                TransportError(
                                    kind: .timeout, delivery: .notSent,
                                    message: "the send's deadline passed before APNs answered")))
                }
                #expect(ContinuousClock.now - start < .seconds(1))
                _ = await blocker.value
                await connector.shutdown(gracePeriod: .zero)
            }
        }
    }
}
