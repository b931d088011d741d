import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Synchronization
import Testing

/// A bulk send through APNs' manners under errors, at the scale of the incident (5,000 devices,
/// some fifty connections ended by the mock): a suite of its own, outside the sanitizer runs,
/// which would make its thousands of requests take minutes.
@Suite struct BadDeviceTokenStormTests {
    /// The common incident: a bulk send of sandbox tokens to production. APNs answers each
    /// BadDeviceToken and ends connections that answer too many (the mock's ``MockAPNsServer/ErrorLimit``,
    /// after 100). Every device gets one outcome, and each is true to what the server did: a token
    /// it answered is rejected BadDeviceToken, one it never processed is never called rejected,
    /// no token is processed twice; and the summary (and one log line at notice) names the likely
    /// cause instead of calling thousands of users' tokens dead.
    @Test func sandboxTokensSentToProductionSayWhy() async throws {
        try await Fixture.with(adjust: { $0.environment = .production }) { fixture in
            let devices = BulkSendTests.devices(5000)
            for device in devices { fixture.server.reject(deviceToken: device.token, with: .badDeviceToken) }
            let reports = AwaitableReports()
            let connector = try fixture.tokenConnector(reportingTo: reports)
            let outcomes = Mutex<[String: BulkOutcome]>([:])
            let summary = try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: devices
            ) { outcome in
                outcomes.withLock { $0[outcome.device.token] = outcome }
            }
            #expect(summary.total == 5000)
            #expect(summary.accepted == 0)
            var processed: [String: Int] = [:]
            for request in fixture.server.requests { processed[String(request.path.dropFirst(10)), default: 0] += 1 }
            #expect(processed.values.allSatisfy { $0 == 1 })  // nothing sent twice
            let all = outcomes.withLock { $0 }
            #expect(all.count == 5000)
            for (token, outcome) in all {
                if processed[token] == 1 {
                    #expect(
                        outcome.rejection?.reason == .badDeviceToken || outcome.transportFailure?.delivery == .unknown)
                } else {
                    #expect(outcome.rejection == nil, "\(token) was never processed")
                    #expect(outcome.transportFailure != nil)
                }
            }
            // Some may fail (a deadline passed while connections were replaced, a request cut off
            // with its connection): each failure is checked against the server's view below.
            #expect(summary.badDeviceTokens + summary.failed == 5000)
            // About fifty ended, 100 errors each (fewer when sends fail on a busy machine): the
            // mock's manners, met over and over.
            #expect(fixture.server.connectionsEndedForErrors >= 10)
            let cause = try #require(summary.likelyCause)
            #expect(
                cause
                    == "\(summary.badDeviceTokens) of 5000 devices were refused BadDeviceToken: the tokens are most likely of the other environment (development builds register sandbox tokens, App Store and TestFlight builds production ones). Check the connector's environment before forgetting them."
            )
            let notice = reports.lines("APNs bulk send: " + cause)
            #expect(notice.count == 1 && notice.first?.level == .notice)
            // A few refused tokens among many accepted say nothing of the kind.
            var few = BulkSendSummary()
            few.accepted = 990
            few.rejected = 10
            few.badDeviceTokens = 10
            #expect(few.likelyCause == nil)
        }
    }
}
