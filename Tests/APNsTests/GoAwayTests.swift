import APNs
import APNsMockServer
import Foundation
import Testing

/// The transport carries on through GOAWAY: every send gets exactly one result, and the server
/// sees every notification exactly once.
@Suite struct GoAwayTests {
    @Test func fiveThousandConcurrentSendsThroughRepeatedGoAway() async throws {
        let fixture = try await Fixture.start { $0.goAwayAfterStreams = 300 }
        let connector = try fixture.tokenConnector()
        let count = 5_000
        let ids = (0..<count).map { _ in APNsID() }
        let results = await withTaskGroup(of: (Int, Result<APNsResponse, any Error>).self) { group in
            for index in 0..<count {
                group.addTask {
                    let notification = AlertNotification(bundleID: Fixture.bundleID, apnsID: ids[index]) { Alert("n\(index)") }
                    do { return (index, .success(try await send(notification, via: connector, to: .test))) }
                    catch { return (index, .failure(error)) }
                }
            }
            var collected: [Int: Result<APNsResponse, any Error>] = [:]
            for await (index, result) in group {
                #expect(collected[index] == nil, "send \(index) got a second result")
                collected[index] = result
            }
            return collected
        }
        #expect(results.count == count)
        let failures = results.values.compactMap { result -> String? in
            if case .failure(let error) = result { return String(describing: error) }
            return nil
        }
        #expect(failures.count == 0, "\(failures.count) failed; first: \(failures.prefix(3))")
        for (index, result) in results {
            if case .success(let response) = result { #expect(response.apnsID == ids[index]) }
        }
        // The server saw each notification exactly once.
        let seen = Dictionary(grouping: fixture.server.requests.compactMap { $0[header: "apns-id"] }, by: { $0 })
        #expect(seen.count == count)
        #expect(seen.values.allSatisfy { $0.count == 1 })
        #expect(fixture.server.connectionCount >= count / 300)
        print("connections:", fixture.server.connectionCount, "client connects:", connector.connectionsOpened)
        try await fixture.stop()
    }

    /// GOAWAY every 50 streams while 1,000 requests are in flight: most requests are refused again
    /// and again, past libcurl's own five retries. Each must still be sent exactly once.
    @Test func harshGoAwayLosesNothing() async throws {
        let fixture = try await Fixture.start { $0.goAwayAfterStreams = 50 }
        let connector = try fixture.tokenConnector()
        let count = 2_000
        let failures = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("n\(index)") }
                    return (try? await send(notification, via: connector, to: .test)) == nil
                }
            }
            var failed = 0
            for await failure in group where failure { failed += 1 }
            return failed
        }
        #expect(failures == 0)
        let bodies = Dictionary(grouping: fixture.server.requests.map(\.bodyText), by: { $0 })
        #expect(bodies.count == count)
        #expect(bodies.values.allSatisfy { $0.count == 1 })
        try await fixture.stop()
    }
}
