import APNs
import APNsMockServer
import Foundation
import Testing

/// A send ends by its deadline (plus a small slack) wherever it waits — in libcurl for a stream or
/// a connection too — and a connection that went silent is found when the first request on it
/// times out. Judged by the outcome and by bounds wide enough for a busy machine, never by speed.
@Suite struct DeadlineTests {
    /// The slack the deadline may be overrun by on a busy machine: the loop's own check runs every
    /// 100 ms and gives libcurl 100 ms first.
    static let slack: Duration = .seconds(1)

    /// Sends made with `timeout` at once, each with how long it took and its outcome.
    static func sendConcurrently(
        _ count: Int, via connector: TokenConnector, timeout: Duration
    ) async -> [(Duration, Result<APNsResponse, APNsError>)] {
        await withTaskGroup(of: (Duration, Result<APNsResponse, APNsError>).self) { group in
            for index in 0..<count {
                group.addTask {
                    let started = ContinuousClock.now
                    do throws(APNsError) {
                        let response = try await send(
                            AlertNotification(bundleID: Fixture.bundleID) { Alert("waiting \(index)") }, via: connector,
                            to: .test, timeout: timeout)
                        return (ContinuousClock.now - started, .success(response))
                    } catch {
                        return (ContinuousClock.now - started, .failure(error))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    static func isNotSentTimeout(_ result: Result<APNsResponse, APNsError>) -> Bool {
        guard case .failure(.transport(let failure)) = result else { return false }
        return failure.kind == .timeout && failure.delivery == .notSent
    }

    /// APNs' one stream on a new token connection is held by a send that never gets an answer;
    /// sends made after it wait inside libcurl for the stream (libcurl 7.88 applies no timeout
    /// there). Each ends by its own 1 s deadline, not sent.
    @Test func sendsWaitingForAStreamEndByTheirDeadline() async throws {
        try await Fixture.with(adjust: { $0.oneStreamUntilValidToken = true }) { fixture in
            fixture.server.inject(.neverAnswer)
            let connector = try fixture.tokenConnector()
            let holder = Task {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("holds the stream") }, via: connector,
                    to: .test,
                    timeout: .seconds(8))
            }
            #expect(await fixture.server.arrivals(count: 1, within: .seconds(30)))  // it holds the stream
            // libcurl writes the first request before reading the server's SETTINGS; until it has
            // read them it would open more streams, which the server accepts and leaves unanswered.
            #expect(await fixture.server.settingsAcknowledgements(count: 1, within: .seconds(30)))
            let waiting = await Self.sendConcurrently(5, via: connector, timeout: .seconds(1))
            #expect(waiting.count == 5)
            for (elapsed, result) in waiting {
                #expect(elapsed <= .seconds(1) + Self.slack, "waited \(elapsed)")
                #expect(Self.isNotSentTimeout(result), "\(result)")
            }
            holder.cancel()
            _ = await holder.result
            await connector.shutdown()
            #expect(fixture.server.processedCounts.count <= 1)  // only the holder reached the server
        }
    }

    /// A server that accepts TCP and never finishes TLS: every send ends by its deadline, not sent.
    @Test func sendsWaitingForAHandshakeEndByTheirDeadline() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.stallHandshake)
            let connector = try fixture.tokenConnector()
            let waiting = await Self.sendConcurrently(5, via: connector, timeout: .seconds(1))
            #expect(waiting.count == 5)
            for (elapsed, result) in waiting {
                #expect(elapsed <= .seconds(1) + Self.slack, "waited \(elapsed)")
                #expect(Self.isNotSentTimeout(result), "\(result)")
            }
            await connector.shutdown()
        }
    }

    /// Two devices sent at once through a connector that carries one request at a time; each answer
    /// comes 1.85 s after its request. The second device's request waits for its turn until less
    /// than a tenth of its 2 s timeout is left for an answer, so it is not written: not sent, and
    /// the server never sees it (written, it would have ended unknown, and processed).
    @Test func aRequestLeftTooLittleTimeForAnAnswerIsNotWritten() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.delay(.milliseconds(1_850)))
            let connector = try fixture.tokenConnector(adjust: { $0.maximumConcurrentStreams = 1 })
            let devices = (1...2).map { try! Device(token: String(format: "%064x", $0)) }
            var outcomes: [BulkOutcome] = []
            for try await outcome in try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("one stream") }, via: connector, to: devices,
                timeout: .seconds(2))
            {
                outcomes.append(outcome)
            }
            #expect(outcomes.count == 2)
            let sentPaths = Set(fixture.server.requests.map(\.path))
            let notSent = outcomes.filter { outcome in
                guard case .failure(.transport(let failure)) = outcome.result else { return false }
                return failure.kind == .timeout && failure.delivery == .notSent
            }
            // The first request holds the stream (on a machine so busy that the handshake takes
            // longer than the answer's slack, it times out too, written).
            #expect(notSent.count >= 1, "\(outcomes.map(\.result))")
            for outcome in notSent {
                #expect(!sentPaths.contains(outcome.device.path), "a request reported not sent reached the server")
            }
            #expect(fixture.server.requests.count <= 1, "only the first request was written")
            await connector.shutdown()
        }
    }

    /// A connection that answers ten requests and then goes silent, while twenty are in flight: it
    /// is replaced when the first request on it times out, later sends go to the new connection,
    /// and what was not written to the silent one is not reported as possibly delivered.
    @Test func aStallStartingMidStreamIsFoundAtTheFirstTimeout() async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.neverAnswerAfter(requests: 10), connections: 1)
            let connector = try fixture.tokenConnector(adjust: { $0.maximumConcurrentStreams = 20 })
            let devices = (0..<200).map { try! Device(token: String(format: "%064x", $0 + 1)) }
            let ids = Dictionary(uniqueKeysWithValues: devices.map { ($0, APNsID()) })
            var outcomes: [BulkOutcome] = []
            let started = ContinuousClock.now
            let results = try bulkSendOutcomes(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("stall") }, via: connector, to: devices,
                maximumInFlight: 20, timeout: .seconds(2), apnsID: { ids[$0] ?? APNsID() })
            for try await outcome in results { outcomes.append(outcome) }
            let elapsed = ContinuousClock.now - started
            var unknown = 0
            for outcome in outcomes {
                let processed = fixture.server.processedCount(apnsID: ids[outcome.device]?.description ?? "")
                switch outcome.result {
                case .success: #expect(processed == 1)
                case .failure(.transport(let failure)) where failure.delivery == .notSent: #expect(processed == 0)
                case .failure(.transport): unknown += 1
                case .failure(let error): Issue.record("unexpected \(error)")
                }
                #expect(processed <= 1)
            }
            #expect(outcomes.count == 200)
            #expect(connector.stalledConnectionsClosed == 1)
            // Found one timeout late, a second window of 20 would have been written to the silent
            // connection: more than 30 may-have-been-delivered, and about two timeouts in all.
            #expect(unknown <= 30, "\(unknown) may have been delivered")
            #expect(elapsed < .seconds(4), "took \(elapsed)")
            await connector.shutdown()
        }
    }
}
