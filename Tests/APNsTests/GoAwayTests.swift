@testable import APNs
import APNsMockServer
import Foundation
import Testing

/// The transport carries on through GOAWAY: every send gets exactly one result, and the server
/// sees every notification exactly once.
@Suite struct GoAwayTests {
    @Test func fiveThousandConcurrentSendsThroughRepeatedGoAway() async throws {
        try await Fixture.with(adjust: { $0.goAwayAfterStreams = 300 }) { fixture in
            // Every send's deadline counts from when it is made, and all 5,000 are made at once: under
            // a sanitizer (about 80 sends/s), or beside six CPU-bound processes, the last ones would
            // wait past a minute in the queue and time out, which is right, but not what this test
            // is about.
            let connector = try fixture.tokenConnector(adjust: {
                $0.requestTimeout = .seconds(240).scaledForSanitizers
            })
            let count = 5_000.scaledDownForSanitizers
            let ids = (0..<count).map { _ in APNsID() }
            let results = await withTaskGroup(of: (Int, Result<APNsResponse, any Error>).self) { group in
                for index in 0..<count {
                    group.addTask {
                        let notification = AlertNotification(bundleID: Fixture.bundleID, apnsID: ids[index]) {
                            Alert("n\(index)")
                        }
                        do { return (index, .success(try await send(notification, via: connector, to: .test))) } catch {
                            return (index, .failure(error))
                        }
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
            // See harshGoAwayLosesNothing: a rare refusal libcurl reports without its code is `unknown`.
            #expect(failures.count <= 5, "\(failures.count) failed; first: \(failures.prefix(3))")
            #expect(failures.allSatisfy { $0.contains("may have been delivered") }, "\(failures.prefix(3))")
            for (index, result) in results {
                if case .success(let response) = result { #expect(response.apnsID == ids[index]) }
            }
            // The server saw each notification at most once, and every accepted one exactly once.
            let seen = Dictionary(grouping: fixture.server.requests.compactMap { $0[header: "apns-id"] }, by: { $0 })
            #expect(seen.count >= count - failures.count)
            #expect(seen.values.allSatisfy { $0.count == 1 })
            #expect(fixture.server.connectionCount >= count / 300, "client connects: \(connector.connectionsOpened)")
        }
    }

    /// GOAWAY every 50 streams while 1,000 requests are in flight: most requests are refused again
    /// and again, past libcurl's own five retries. Each must still be sent exactly once, and to its
    /// own device, though the transport sends it again on whichever easy handle is free, each of
    /// which carried other devices' requests before.
    @Test func harshGoAwayLosesNothing() async throws {
        try await Fixture.with(adjust: { $0.goAwayAfterStreams = 50 }) { fixture in
            // as above
            let connector = try fixture.tokenConnector(adjust: {
                $0.requestTimeout = .seconds(240).scaledForSanitizers
            })
            let count = 2_000.scaledDownForSanitizers
            let devices = try (0..<count).map { try Device(token: String(format: "%064lx", $0)) }
            let failures = await withTaskGroup(of: String?.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("n\(index)") }
                        do {
                            try await send(notification, via: connector, to: devices[index])
                            return nil
                        } catch {
                            return String(describing: error)
                        }
                    }
                }
                var failed: [String] = []
                for await failure in group { if let failure { failed.append(failure) } }
                return failed
            }
            // libcurl 7.88 sometimes reports a stream refused in the same read that ends the session as
            // a bare CURLE_HTTP2, without the refusal (the HTTP/2 error code is not exposed): the
            // transport cannot prove it unprocessed and says `unknown`. Rare (0–1 in 2,000 here).
            // Older libcurls report no GOAWAY at all and do it more often: 6–17 in 2,000 with
            // Ubuntu 22.04's 7.81.0 (seven runs), each `unknown`, none processed twice.
            let bound = try Libcurl.loaded.get().reportsGoAway ? 5 : 40
            #expect(failures.count <= bound, "\(failures.count) failed; first: \(failures.prefix(3))")
            #expect(failures.allSatisfy { $0.contains("may have been delivered") }, "\(failures.prefix(3))")
            let bodies = Dictionary(grouping: fixture.server.requests.map(\.bodyText), by: { $0 })
            #expect(bodies.count >= count - failures.count)
            #expect(bodies.values.allSatisfy { $0.count == 1 })
            let misdirected = fixture.server.requests.filter { request in
                guard let index = Int(request.path.suffix(8), radix: 16), index < count else { return true }
                return request.path != devices[index].path || !request.bodyText.contains("\"n\(index)\"")
            }
            #expect(misdirected.isEmpty, "\(misdirected.count) to another device; first: \(misdirected.prefix(2))")
        }
    }
}
