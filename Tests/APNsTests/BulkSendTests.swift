import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Synchronization
import Testing

@Suite struct BulkSendTests {
    static func devices(_ count: Int) -> [Device] {
        (0..<count).map { index in
            var bytes = [UInt8](repeating: 0, count: 32)
            withUnsafeBytes(of: UInt32(index).bigEndian) { bytes.replaceSubrange(28..<32, with: $0) }
            return try! Device(tokenBytes: bytes)
        }
    }

    @Test func cancellingTheConsumerStopsTheSend() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let devices = Self.devices(5000)
            let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
            let consumer = Task {
                var received = 0
                for try await _ in try bulkSendOutcomes(notification, via: connector, to: devices, maximumInFlight: 20)
                {
                    received += 1
                    if received == 100 { withUnsafeCurrentTask { $0?.cancel() } }
                }
                return received
            }
            let received = try await consumer.value
            #expect(received >= 100 && received < 200)
            // No new requests start after cancellation: requests started and not read never exceed
            // the limit (20).
            #expect(fixture.server.streamCount <= received + 20)
        }
    }

    @Test func droppingTheIteratorStopsTheSend() async throws {
        let connector = TokenRecordingConnector()
        let devices = Self.devices(10_000)
        var received = 0
        for try await outcome in try bulkSendOutcomes(
            BackgroundNotification(bundleID: "com.example.app"), via: connector, to: devices, maximumInFlight: 10)
        {
            #expect(outcome.isAccepted)
            received += 1
            if received == 50 { break }
        }
        #expect(received == 50)
        #expect(connector.requests.count < 200)
    }

    @Test func backPressureBoundsTheWorkAheadOfTheConsumer() async throws {
        let connector = TokenRecordingConnector()
        let results = try bulkSendOutcomes(
            AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: Self.devices(1000),
            maximumInFlight: 8)
        var iterator = results.makeAsyncIterator()
        _ = try await iterator.next()
        // The consumer read one outcome and stopped; requests in flight plus outcomes not read stay
        // within the limit (8), however long we wait. Yield generously to let the producer run.
        for _ in 0..<200 { await Task.yield() }
        #expect(connector.requests.count <= 1 + 8)
        var rest = 1
        while try await iterator.next() != nil { rest += 1 }
        #expect(rest == 1000)
        #expect(connector.requests.count == 1000)
    }

    @Test func backPressureHoldsThroughTheTransport() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let results = try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: Self.devices(500),
                maximumInFlight: 16)
            var iterator = results.makeAsyncIterator()
            #expect(try await iterator.next()?.isAccepted == true)
            // One read: at most 16 more were started, answered or not, however long it waits.
            #expect(await Poll.settled { fixture.server.streamCount } <= 1 + 16)
            var rest = 1
            while let outcome = try await iterator.next() {
                #expect(outcome.isAccepted)
                rest += 1
            }
            #expect(rest == 500)
            #expect(fixture.server.streamCount == 500)
        }
    }

    @Test func droppingTheIteratorCancelsWhatTheTransportHasInFlight() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            var received = 0
            for try await outcome in try bulkSendOutcomes(
                BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: Self.devices(20_000),
                maximumInFlight: 50)
            {
                #expect(outcome.isAccepted)
                received += 1
                if received == 300 { break }
            }
            #expect(received == 300)
            // Requests already on the wire may still be answered; wait until the server is quiet.
            // Quiet for three seconds, not the default 600 ms: beside another test process on two
            // cores (CI's libcurl stage) the mock's event loop has waited a second for a core.
            let started = await Poll.settled(quiet: .seconds(3)) { fixture.server.streamCount }
            #expect(started <= 300 + 50)
            // The connector is still usable, and nothing more of the bulk send arrives.
            try await send(BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: Device.test)
            #expect(await Poll.settled(quiet: .seconds(3)) { fixture.server.streamCount } == started + 1)
        }
    }

    @Test func payloadIsSerialisedOnceAndValidatedUpFront() async throws {
        let connector = CertificateRecordingConnector()
        let devices = Self.devices(3)
        var count = 0
        for try await _ in try bulkSendOutcomes(
            AlertNotification(bundleID: "com.example.app") {
                Alert("x"); Badge(1)
            }, via: connector, to: devices)
        { count += 1 }
        #expect(count == 3)
        #expect(Set(connector.requests.map(\.bodyText)) == [#"{"aps":{"alert":"x","badge":1}}"#])
        #expect(Set(connector.requests.map(\.path)) == Set(devices.map(\.path)))
        await #expect(throws: APNsError.validation(.negativeBadge(-1))) {
            try await send(AlertNotification(bundleID: "com.example.app") { Badge(-1) }, via: connector, to: devices)
        }
    }

    /// Each device's own apns-id, derived here from the token as a caller would from its records.
    static func apnsID(for device: Device) -> APNsID {
        let digits = Array(device.token.suffix(12))
        return APNsID("7f3c9a2b-1d4e-4f5a-8b6c-" + String(digits)) ?? APNsID()
    }

    @Test func eachDeviceCanHaveItsOwnAPNsIDThroughTheTransport() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let devices = Self.devices(300)
            var answered: [String: String] = [:]
            for try await outcome in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID, collapseID: "c") { Alert("x") }, via: connector,
                to: devices,
                apnsID: { Self.apnsID(for: $0) })
            {
                answered[outcome.device.token] = (try? outcome.result.get())?.apnsID?.description
            }
            #expect(answered.count == 300)
            #expect(devices.allSatisfy { answered[$0.token] == Self.apnsID(for: $0).description })
            let sent = fixture.server.requests
            #expect(sent.count == 300)
            #expect(
                sent.allSatisfy { request in
                    request[header: "apns-id"]
                        == APNsID("7f3c9a2b-1d4e-4f5a-8b6c-" + String(request.path.suffix(12)))?.description
                        && request.headers.filter { $0.name == "apns-id" }.count == 1
                        && request[header: "apns-collapse-id"] == "c"
                })
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    @Test func eachDeviceCanHaveItsOwnAPNsIDThroughAnyConnector() async throws {
        let connector = CertificateRecordingConnector()
        let devices = Self.devices(3)
        for try await _ in try bulkSendOutcomes(
            AlertNotification(bundleID: "com.example.app", expiration: .immediately, collapseID: "c") { Alert("x") },
            via: connector,
            to: devices, apnsID: { Self.apnsID(for: $0) })
        {}
        let request = try #require(connector.requests.first { $0.path == devices[1].path })
        #expect(
            request.headers.map(\.name) == [
                "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id", "apns-collapse-id",
            ])
        #expect(request[header: "apns-id"] == Self.apnsID(for: devices[1]).description)
    }

    /// Without `maximumInFlight`, a bulk send starts the connector's concurrency limit plus two
    /// refill batches, the reserve that waits for the next free stream; an explicit limit keeps
    /// its meaning.
    @Test func theDefaultInFlightIsTheConcurrencyLimitAndAReserve() async throws {
        /// Holds every request until released, counting how many it holds at once.
        final class Holding: Connector {
            typealias Authentication = TokenAuthentication
            var concurrencyLimit: Int { 40 }  // refill batches of 2 (a sixteenth): a reserve of 4
            // `Locked`, not `Mutex`: ThreadSanitizer does not see `Mutex`'s futex on Linux and
            // reported its contended accesses as races (see `Locked`).
            let state = Locked((held: 0, peak: 0, released: false, waiters: [CheckedContinuation<Void, Never>]()))

            func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
                await withCheckedContinuation { continuation in
                    let go = state.withLock { state -> Bool in
                        if state.released { return true }
                        state.held += 1
                        state.peak = max(state.peak, state.held)
                        state.waiters.append(continuation)
                        return false
                    }
                    if go { continuation.resume() }
                }
                return APNsHTTPResponse(status: 200, headers: [])
            }

            /// The most held at once, once that has not changed for 3 s (beside another test process
            /// on two cores a task can wait a second for a core); then lets everything go.
            func settledPeakThenRelease() async -> Int {
                // Once the send has begun (a busy machine can take a while to start it).
                await Poll.until { state.withLock { $0.peak } > 0 }
                let peak = await Poll.settled(quiet: .seconds(3)) { state.withLock { $0.peak } }
                let waiters = state.withLock { state in
                    state.released = true
                    defer { state.waiters.removeAll() }
                    return state.waiters
                }
                waiters.forEach { $0.resume() }
                return peak
            }
        }
        let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
        for (maximumInFlight, expected) in [(nil, 44), (40, 40)] as [(Int?, Int)] {
            let connector = Holding()
            async let summary = send(
                notification, via: connector, to: Self.devices(200), maximumInFlight: maximumInFlight)
            let peak = await connector.settledPeakThenRelease()
            #expect(peak == expected, "maximumInFlight \(String(describing: maximumInFlight))")
            #expect(try await summary.accepted == 200)
        }
    }

    /// A connector that reports no limit (`Int.max`) gets a default that saturates, not a trap.
    @Test func aConnectorWithoutALimitDoesNotOverflowTheDefault() async throws {
        final class Unlimited: Connector {
            typealias Authentication = TokenAuthentication
            var concurrencyLimit: Int { .max }
            func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
                APNsHTTPResponse(status: 200, headers: [])
            }
        }
        let summary = try await send(
            AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: Unlimited(), to: Self.devices(10))
        #expect(summary.accepted == 10)
    }

    @Test func poolOpensTheConfiguredConnections() async throws {
        try await Fixture.with(adjust: {
            $0.maximumConcurrentStreams = 10
            $0.minimumTokenUpdateInterval = nil  // two connectors for one key, possibly a second apart
        }) { fixture in
            let pooled = try fixture.tokenConnector(adjust: {
                $0.maximumConnectionsPerHost = 2; $0.maximumConcurrentStreams = 10
            })
            #expect(pooled.concurrencyLimit == 20)
            var accepted = 0
            for try await outcome in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: pooled, to: Self.devices(400))
            {
                if outcome.isAccepted { accepted += 1 }
            }
            #expect(accepted == 400)
            #expect(pooled.connectionsOpened == 2)
            #expect(fixture.server.connectionCount == 2)

            let single = try fixture.tokenConnector(adjust: { $0.maximumConcurrentStreams = 10 })
            for try await _ in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("y") }, via: single, to: Self.devices(400))
            {}
            #expect(single.connectionsOpened == 1)
            #expect(fixture.server.connectionCount == 3)
        }
    }

    @Test func bulkSendsGiveEachDeviceItsOwnAPNsID() async throws {
        let connector = TokenRecordingConnector()
        let shared = AlertNotification(bundleID: "com.example.app", apnsID: APNsID()) { Alert("x") }
        await #expect(throws: APNsError.validation(.apnsIDInBulkSend)) {
            try await send(shared, via: connector, to: BulkSendTests.devices(3))
        }
        #expect(throws: APNsError.validation(.apnsIDInBulkSend)) {
            try bulkSendOutcomes(shared, via: connector, to: BulkSendTests.devices(3))
        }
        try await send(
            AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: BulkSendTests.devices(3))
        #expect(connector.requests.count == 3)
        #expect(connector.requests.allSatisfy { $0[header: "apns-id"] == nil })
    }

    @Test func eagerBulkSendCountsEveryOutcome() async throws {
        let devices = BulkSendTests.devices(10)
        let refused = Set(devices.prefix(3).map(\.path))
        let connector = TokenRecordingConnector { request in
            refused.contains(request.path)
                ? .rejected(.unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000)) : .accepted()
        }
        var seen: [String] = []
        let summary = try await send(
            AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: devices
        ) { outcome in
            seen.append(outcome.device.token)
        }
        #expect(summary.accepted == 7 && summary.rejected == 3 && summary.failed == 0 && !summary.cancelled)
        #expect(summary.description == "7 accepted, 3 rejected, 0 failed (0 may have been delivered)")
        #expect(Set(seen) == Set(devices.map(\.token)) && seen.count == 10)
    }

    /// An actor whose executor counts the jobs enqueued on it: each time a task hops onto the
    /// actor is one job.
    actor CountingActor {
        final class Executor: SerialExecutor {
            let queue = DispatchQueue(label: "counting-actor")
            let jobs = Mutex(0)
            func enqueue(_ job: consuming ExecutorJob) {
                jobs.withLock { $0 += 1 }
                let job = UnownedJob(job)
                queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
            }
        }
        let executor = Executor()
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        var accepted = 0

        func sendEagerly(to devices: [Device], via connector: TokenConnector) async throws -> BulkSendSummary {
            try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: devices) {
                outcome in if outcome.isAccepted { accepted += 1 }
            }
        }

        func iterate(_ devices: [Device], via connector: TokenConnector) async throws {
            for try await outcome in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: devices)
            where outcome.isAccepted {
                accepted += 1
            }
        }
    }

    /// Outcomes read on an actor cost a hop per batch the transport delivers, not one per outcome:
    /// the eager send runs on its caller's actor, where `onOutcome` was written, and a reader
    /// waiting for outcomes is resumed on its actor directly.
    @Test func outcomesReadOnAnActorDoNotHopPerOutcome() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let devices = Self.devices(2000)
            let actor = CountingActor()
            let before = actor.executor.jobs.withLock { $0 }
            let summary = try await actor.sendEagerly(to: devices, via: connector)
            let eager = actor.executor.jobs.withLock { $0 } - before
            #expect(summary.accepted == devices.count)
            #expect(await actor.accepted == devices.count)
            // One job per outcome (at least 2,000) when each onOutcome hopped onto the actor.
            #expect(eager < devices.count / 2, "\(eager) jobs on the actor for \(devices.count) outcomes")

            let beforeReading = actor.executor.jobs.withLock { $0 }
            try await actor.iterate(devices, via: connector)
            let reading = actor.executor.jobs.withLock { $0 } - beforeReading
            #expect(await actor.accepted == 2 * devices.count)
            #expect(reading < devices.count / 2, "\(reading) jobs on the actor for \(devices.count) outcomes")
        }
    }
}

extension BulkSendTests {
    /// libcurl's own handling of thousands of sends through rejections and GOAWAY, and of a pool's four
    /// connections, which a loaded machine (and libcurl 7.81) stretches past their deadlines: the
    /// serial tier runs every suite named RealTime alone.
    @Suite struct RealTime {
        @Test func everyDeviceGetsExactlyOneOutcomeThroughRejectionsAndGoAway() async throws {
            try await Fixture.with(adjust: { $0.goAwayAfterStreams = 250 }) { fixture in
                let connector = try fixture.tokenConnector()
                let devices = BulkSendTests.devices(3000)
                let rejected = Set(devices.enumerated().filter { $0.offset % 7 == 3 }.map(\.element.token))
                for token in rejected {
                    fixture.server.reject(
                        deviceToken: token, with: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
                }

                var outcomes: [String: BulkOutcome] = [:]
                var duplicates = 0
                for try await outcome in try bulkSendOutcomes(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("Sale!") }, via: connector, to: devices)
                {
                    if outcomes.updateValue(outcome, forKey: outcome.device.token) != nil { duplicates += 1 }
                }
                #expect(duplicates == 0)
                #expect(outcomes.count == devices.count)
                let unregistered = outcomes.values.filter { $0.rejection?.reason == .unregistered }
                #expect(Set(unregistered.map(\.device.token)) == rejected)
                #expect(
                    unregistered.allSatisfy { $0.rejection?.timestamp == Date(timeIntervalSince1970: 1_700_000_000) })
                #expect(outcomes.values.filter(\.isAccepted).count == devices.count - rejected.count)
                // The server processed each device exactly once, across several connections.
                let paths = Dictionary(grouping: fixture.server.requests.map(\.path), by: { $0 })
                #expect(paths.count == devices.count)
                #expect(paths.values.allSatisfy { $0.count == 1 })
                #expect(fixture.server.connectionCount >= 3000 / 250)
            }
        }

        /// libcurl puts a request on the first connection with room: without the transport's share, a
        /// pool of four carrying 400 requests put 397 on one connection and one on each of the others.
        /// Every request is held by the server until all are in flight, so the share is each
        /// connection's 100.
        @Test func aPoolSpreadsItsRequestsEvenly() async throws {
            try await Fixture.with(adjust: { $0.recordsRequests = true }) { fixture in
                fixture.server.inject(.delay(.seconds(3).scaledForSanitizers))
                let pooled = try fixture.tokenConnector(adjust: { $0.maximumConnectionsPerHost = 4 })
                let summary = try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: pooled,
                    to: BulkSendTests.devices(400))
                #expect(summary.accepted == 400)
                let perConnection = Dictionary(grouping: fixture.server.requests, by: { $0.remoteAddress ?? "" })
                #expect(perConnection.count == 4)
                #expect(perConnection.values.map(\.count).sorted() == [100, 100, 100, 100])
            }
        }
    }
}
