import APNs
import APNsMockServer
import Foundation
import Testing

/// For each way the server can misbehave, 1,000 concurrent sends through real libcurl to the real
/// HTTP/2 + TLS mock. Whatever happens, each send ends in exactly one outcome, and the outcome is
/// true to what the server processed:
/// - accepted ⇒ processed exactly once;
/// - rejected, or failed with delivery `.notSent` ⇒ never processed;
/// - failed with delivery `.unknown` ⇒ processed at most once;
/// - no apns-id is ever processed twice (no silent re-send);
/// - every outcome arrives within the send's deadline + 1 s;
/// - afterwards the connector heals: a new send succeeds within 1 s.
@Suite(.serialized) struct FaultMatrixTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var fault: MockAPNsServer.Fault
        var connections: Int?
        var requests: Int?
        var timeout: Duration = .seconds(5)
        /// What the outcomes must add up to, beyond the rules every case obeys.
        var check: @Sendable (Tally) -> Void
        var testDescription: String { "\(fault)" + (connections.map { ", \($0) connection(s)" } ?? "") }
    }

    struct Tally: Sendable {
        var accepted = 0
        var rejected: [APNsRejection] = []
        var notSent: [TransportError] = []
        var unknown: [TransportError] = []
        var total: Int { accepted + rejected.count + notSent.count + unknown.count }
        /// Each distinct (kind, curl code) among the unknown outcomes, with its count and one message.
        var unknownKinds: String {
            Dictionary(grouping: unknown, by: { "\($0.kind) curl \($0.curlCode.map(String.init) ?? "-")" })
                .map { "\($0.value.count)× \($0.key) (\($0.value[0].message))" }.sorted().joined(separator: "; ")
        }
    }

    static let count = 1_000

    static let cases: [Case] = [
        // A bare TCP RST (no TLS close_notify before it). libcurl 7.88 tries to send again a request
        // that got no response bytes on a reused connection: the transport stops each such re-send
        // at the write, or finds the connection it was written on closed when the re-send fails
        // earlier (a connect timeout while it waits), and reports it lost either way.
        Case(fault: .resetAfterProcessing(requests: 20), connections: 2) { tally in
            #expect(tally.unknown.count >= 20)
            #expect(tally.unknown.allSatisfy { $0.kind == .connectionLost }, "\(tally.unknownKinds)")
            #expect(tally.accepted + tally.unknown.count == count)
        },
        Case(fault: .closeAfterProcessing(requests: 20), connections: 2) { tally in
            #expect(tally.unknown.count >= 20)
            #expect(tally.accepted + tally.unknown.count == count)
        },
        // The first timeout with nothing answered since shuts the stalled connection down: what was
        // on it fails at once (written, so unknown), and the connector opens a new one.
        Case(fault: .neverAnswer, connections: 1, timeout: .seconds(2)) { tally in
            #expect(tally.unknown.count == count)
            #expect(tally.unknown.allSatisfy { $0.kind == .timeout || $0.kind == .connectionLost }, "\(tally.unknownKinds)")
        },
        // Sends written to the slow connection time out (unknown); once the first times out with
        // nothing answered since, the connection is replaced and later ones may still succeed.
        Case(fault: .delay(Duration.seconds(3).scaledForSanitizers), connections: 1, timeout: .seconds(1)) { tally in
            #expect(tally.unknown.count >= count / 2)
            #expect(tally.unknown.allSatisfy { $0.kind == .timeout || $0.kind == .connectionLost }, "\(tally.unknownKinds)")
            #expect(tally.accepted + tally.unknown.count == count)
        },
        // REFUSED_STREAM promises the request was not processed: the transport sends it again.
        Case(fault: .resetStreams(errorCode: 7), connections: 1) { tally in
            #expect(tally.accepted == count)
        },
        // Any other stream error after processing: may have been delivered.
        Case(fault: .resetStreamsAfterProcessing(errorCode: 2), requests: 50) { tally in
            #expect(tally.unknown.count == 50)
            #expect(tally.unknown.allSatisfy { $0.kind == .protocolError }, "\(tally.unknownKinds)")
            #expect(tally.accepted == count - 50)
        },
        // Streams above the GOAWAY's last-stream-id were never processed: all sent again, once.
        // (libcurl 7.88 may report one refused in the same read that ends the session without its
        // code: `unknown`, see GoAwayTests.)
        Case(fault: .goAway(afterRequests: 100, errorCode: 0, debugData: #"{"reason":"Shutdown"}"#, lowerBy: 10), connections: 3) { tally in
            #expect(tally.accepted >= count - 5)
            #expect(tally.accepted + tally.unknown.count == count)
        },
        Case(fault: .respond(status: 503, retryAfter: 2, body: "<html>Service Unavailable</html>"), requests: 100) { tally in
            #expect(tally.rejected.count == 100)
            #expect(tally.rejected.allSatisfy { $0.status == 503 && $0.reason == nil && $0.retryAfter == .seconds(2) && $0.retry == .withBackoff })
            #expect(tally.accepted == count - 100)
        },
    ]

    @Test(arguments: cases)
    func everySendEndsOnceAndTruthfully(_ example: Case) async throws {
        let fixture = try await Fixture.start { $0.recordsRequests = false }
        fixture.server.inject(example.fault, connections: example.connections, requests: example.requests)
        let timeout = example.timeout.scaledForSanitizers
        let connector = try fixture.tokenConnector(adjust: { $0.requestTimeout = timeout })
        let ids = (0..<Self.count).map { _ in APNsID() }
        let outcomes = await withTaskGroup(of: (Int, Result<APNsResponse, APNsError>, Duration).self) { group in
            for index in 0..<Self.count {
                group.addTask {
                    let notification = AlertNotification(bundleID: Fixture.bundleID, apnsID: ids[index]) { Alert("n\(index)") }
                    let start = ContinuousClock.now  // the send's deadline counts from here
                    do throws(APNsError) {
                        let response = try await send(notification, via: connector, to: .test)
                        return (index, .success(response), ContinuousClock.now - start)
                    } catch {
                        return (index, .failure(error), ContinuousClock.now - start)
                    }
                }
            }
            var collected: [Int: (Result<APNsResponse, APNsError>, Duration)] = [:]
            for await (index, result, elapsed) in group {
                #expect(collected[index] == nil, "send \(index) ended twice")
                collected[index] = (result, elapsed)
            }
            return collected
        }
        #expect(outcomes.count == Self.count)

        var tally = Tally()
        let processed = fixture.server.processedCounts
        for (index, (result, elapsed)) in outcomes {
            let times = processed[ids[index].description] ?? 0
            #expect(times <= 1, "apns-id \(ids[index]) was processed \(times) times")
            #expect(elapsed <= timeout + .seconds(1), "send \(index) took \(elapsed)")
            switch result {
            case .success:
                tally.accepted += 1
                #expect(times == 1, "accepted but processed \(times) times")
            case .failure(.rejected(let rejection)):
                tally.rejected.append(rejection)
                #expect(times == 0, "rejected but processed")
            case .failure(.transport(let failure)) where failure.delivery == Delivery.notSent:
                tally.notSent.append(failure)
                #expect(times == 0, "reported not sent but processed: \(failure)")
            case .failure(.transport(let failure)):
                tally.unknown.append(failure)
            case .failure(let error):
                Issue.record("unexpected \(error)")
            }
        }
        #expect(tally.total == Self.count)
        example.check(tally)

        // Healed: the server behaves again, and the connector reaches it at once (a new TLS
        // connection where the old one stalled). The bound allows for the other suites running in
        // parallel on two cores; alone it takes a few milliseconds.
        fixture.server.inject(nil)
        let healStart = ContinuousClock.now
        let response = try await send(
            AlertNotification(bundleID: Fixture.bundleID) { Alert("after") }, via: connector, to: .test, timeout: Duration.seconds(5).scaledForSanitizers)
        #expect(response.status == 200)
        #expect(ContinuousClock.now - healStart < Duration.seconds(5).scaledForSanitizers)
        if case .neverAnswer = example.fault { #expect(connector.stalledConnectionsClosed == 1) }
        await connector.shutdown(gracePeriod: .seconds(1))
        try await fixture.stop()
    }

    /// libcurl 7.88 sends again, on a new connection, a request that got no response byte on a
    /// reused connection that died. When that connection never finishes its handshake, the re-send
    /// fails (connect timeout) before the transport's pre-request callback can stop it — but the
    /// request was written, and processed, on the connection that died: connection-lost and
    /// unknown, never a timeout, and never sent twice.
    @Test func aReSendThatCannotConnectIsStillConnectionLost() async throws {
        let fixture = try await Fixture.start { $0.recordsRequests = false }
        let connector = try fixture.tokenConnector(adjust: {
            $0.connectTimeout = Duration.milliseconds(300).scaledForSanitizers
            $0.requestTimeout = Duration.seconds(10).scaledForSanitizers
        })
        // The first connection resets (a bare TCP RST) once it has processed 20 requests; all but
        // the first request on it go on a reused connection.
        fixture.server.inject(.resetAfterProcessing(requests: 20), connections: 1)
        let ids = (0..<20).map { _ in APNsID() }
        let outcomes = await withTaskGroup(of: Result<APNsResponse, APNsError>.self) { group in
            func start(_ index: Int) {
                group.addTask {
                    let notification = AlertNotification(bundleID: Fixture.bundleID, apnsID: ids[index]) { Alert("n\(index)") }
                    do throws(APNsError) { return .success(try await send(notification, via: connector, to: .test)) } catch { return .failure(error) }
                }
            }
            for index in 0..<19 { start(index) }
            // Every connection from now on stalls its handshake; the 20th request sets off the reset.
            let waitUntil = ContinuousClock.now + Duration.seconds(5).scaledForSanitizers
            while fixture.server.processedCounts.count < 19, ContinuousClock.now < waitUntil { try? await Task.sleep(for: .milliseconds(2)) }
            fixture.server.inject(.stallHandshake)
            start(19)
            var results: [Result<APNsResponse, APNsError>] = []
            for await result in group { results.append(result) }
            return results
        }
        var failures: [TransportError] = []
        for outcome in outcomes {
            if case .failure(.transport(let failure)) = outcome { failures.append(failure) } else { Issue.record("not a transport failure: \(outcome)") }
        }
        #expect(failures.count == 20)
        let kinds = Dictionary(grouping: failures, by: { "\($0.kind) curl \($0.curlCode.map(String.init) ?? "-")" }).mapValues(\.count)
        #expect(failures.allSatisfy { $0.kind == .connectionLost && $0.delivery == .unknown }, "\(kinds)")
        #expect(ids.allSatisfy { fixture.server.processedCount(apnsID: $0.description) == 1 })
        fixture.server.inject(nil)
        await connector.shutdown(gracePeriod: .seconds(1))
        try await fixture.stop()
    }
}
