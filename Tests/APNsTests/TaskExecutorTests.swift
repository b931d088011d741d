import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// A task that prefers a connector's `taskExecutor` runs on the connector's transport thread —
/// its sends and the code after them cross no thread — and is never stranded: once the connector
/// shuts down, such a task runs on the global concurrent executor.
@Suite(.timeLimit(.minutes(1))) struct TaskExecutorTests {
    static let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("here") }

    /// The transport thread's name (``CurlMultiLoop``'s, at most 15 bytes on Linux).
    static let transportThread = "swift-apns.curl"

    /// The calling thread's name (Foundation's; the transport names its thread there and in the
    /// kernel).
    static func threadName() -> String {
        Thread.current.name ?? "?"
    }

    @Test func codeAroundASendRunsOnTheTransportThread() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let id = APNsID()
            let (before, response, after) = try await withTaskExecutorPreference(connector.taskExecutor) {
                let before = Self.threadName()
                let response = try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("here") }, via: connector,
                    to: .test)
                return (before, response, Self.threadName())
            }
            #expect(before == Self.transportThread)
            #expect(after == Self.transportThread)
            #expect(Self.threadName() != Self.transportThread)  // the preference ends with its scope
            #expect(response.status == 200)
            #expect(response.apnsID == id)
            #expect(fixture.server.requests.count == 1)
            #expect(connector.connectionsOpened == 1)
            await connector.shutdown()
        }
    }

    @Test func concurrentSendsPreferringTheExecutorAllComplete() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            let devices = BulkSendTests.devices(300)
            let results = try await withThrowingTaskGroup(of: (Int, String, String).self) { group in
                for device in devices {
                    group.addTask(executorPreference: connector.taskExecutor) {
                        let response = try await send(Self.notification, via: connector, to: device)
                        return (response.status, Self.threadName(), device.description)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 300)
            #expect(results.allSatisfy { $0.0 == 200 })
            #expect(Set(results.map(\.1)) == [Self.transportThread])
            #expect(Set(results.map(\.2)) == Set(devices.map(\.description)))
            #expect(fixture.server.requests.count == 300)
            await connector.shutdown()
        }
    }

    /// Devices that note which thread reads them: a bulk send's producer reads them lazily.
    struct WatchedDevices: Sequence, Sendable {
        final class Threads: Sendable { let names = Locked<Set<String>>([]) }
        let devices: [Device]
        let threads = Threads()

        func makeIterator() -> AnyIterator<Device> {
            var iterator = devices.makeIterator()
            return AnyIterator { [threads] in
                threads.names.withLock { _ = $0.insert(TaskExecutorTests.threadName()) }
                return iterator.next()
            }
        }
    }

    /// A bulk send from a task on the executor runs there whole: its producer (which reads the
    /// devices) as well as its reader. From an ordinary task, neither does.
    @Test(arguments: [true, false])
    func aBulkSendOnTheExecutorRunsThereWhole(onExecutor: Bool) async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let devices = WatchedDevices(devices: BulkSendTests.devices(500))
            let (summary, seen, readers) = try await withTaskExecutorPreference(
                onExecutor ? connector.taskExecutor : nil
            ) {
                var seen: [String] = []
                var readers: Set<String> = []
                let summary = try await send(Self.notification, via: connector, to: devices, maximumInFlight: 50) {
                    outcome in
                    seen.append(outcome.device.description)
                    readers.insert(Self.threadName())
                }
                return (summary, seen, readers)
            }
            #expect(summary.accepted == 500)
            #expect(summary.total == 500)
            #expect(seen.sorted() == devices.devices.map(\.description).sorted())
            let producers = devices.threads.names.withLock { $0 }
            if onExecutor {
                #expect(readers == [Self.transportThread])
                #expect(producers == [Self.transportThread])
            } else {
                #expect(!readers.contains(Self.transportThread))
                #expect(!producers.contains(Self.transportThread))
            }
            await connector.shutdown()
        }
    }

    /// A task on the executor that only yields gets turns, and libcurl still gets its own: sends
    /// from elsewhere complete meanwhile.
    @Test func aTaskThatOnlyYieldsDoesNotStopTheTransport() async throws {
        final class Flag: Sendable { let raised = Locked(false) }  // not `Mutex`: see `Locked`
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let done = Flag()
            let spinner = Task(executorPreference: connector.taskExecutor) {
                var turns = 0
                while !done.raised.withLock({ $0 }) {
                    await Task.yield()
                    turns += 1
                }
                return turns
            }
            let response = try await send(Self.notification, via: connector, to: .test, timeout: .seconds(10))
            let second = try await send(Self.notification, via: connector, to: .test, timeout: .seconds(10))
            done.raised.withLock { $0 = true }
            let turns = await spinner.value
            #expect(response.status == 200)
            #expect(second.status == 200)
            #expect(turns > 0)
            await connector.shutdown()
        }
    }

    /// Shutting the connector down from its own thread returns; what follows runs elsewhere.
    @Test func shutdownFromTheExecutorReturnsAndTheTaskMovesOn() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let (first, after, late) = try await withTaskExecutorPreference(connector.taskExecutor) {
                let first = try await send(Self.notification, via: connector, to: .test).status
                await connector.shutdown(gracePeriod: .seconds(1))
                let after = Self.threadName()
                let late: APNsError?
                do throws(APNsError) {
                    try await send(Self.notification, via: connector, to: .test)
                    late = nil
                } catch {
                    late = error
                }
                return (first, after, late)
            }
            #expect(first == 200)
            #expect(after != Self.transportThread)
            #expect(
                late
                    == .transport(
                        TransportError(
                            kind: .shutDown, delivery: .notSent, message: "the connector's transport was shut down")))
            #expect(fixture.server.requests.count == 1)
        }
    }

    /// A task that prefers a connector already shut down (or one never used) still runs.
    @Test func aTaskThatPrefersAShutDownConnectorIsNotStranded() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            await connector.shutdown()
            let ran = await Task(executorPreference: connector.taskExecutor) { Self.threadName() }.value
            #expect(ran != Self.transportThread)
            #expect(AnyConnector(connector).taskExecutor != nil)
            #expect(AnyConnector(TokenRecordingConnector()).taskExecutor == nil)  // no thread of its own
        }
    }
}

extension TaskExecutorTests {
    /// A deadline as it passes, in real time through libcurl: the serial tier runs every suite named
    /// RealTime alone.
    @Suite(.timeLimit(.minutes(1))) struct RealTime {
        /// Deadlines hold for a send made on the executor: the loop does not wait for its own task.
        @Test func aSendOnTheExecutorStillTimesOut() async throws {
            try await Fixture.with { fixture in
                fixture.server.inject(.neverAnswer)
                let connector = try fixture.tokenConnector()
                let start = ContinuousClock.now
                let error = await withTaskExecutorPreference(connector.taskExecutor) { () -> APNsError? in
                    do throws(APNsError) {
                        try await send(
                            TaskExecutorTests.notification, via: connector, to: .test, timeout: .milliseconds(300))
                        return nil
                    } catch {
                        return error
                    }
                }
                guard case .transport(let failure)? = error else {
                    Issue.record("expected a transport failure, got \(String(describing: error))")
                    return
                }
                #expect(failure.kind == .timeout)
                #expect(failure.delivery == .unknown)  // written, never answered
                #expect(ContinuousClock.now - start < Duration.seconds(2).scaledForSanitizers)
                await connector.shutdown(gracePeriod: .zero)
            }
        }
    }
}
