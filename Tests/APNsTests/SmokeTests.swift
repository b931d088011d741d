import APNs
import APNsMockServer
import Foundation
import Testing

@Suite struct SmokeTests {
    @Test func alertThroughLibcurl() async throws {
        let t0 = Date()
        let fixture = try await Fixture.start()
        let t1 = Date()
        let connector = try fixture.tokenConnector()
        let t2 = Date()
        let response = try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }, via: connector, to: .test)
        let t3 = Date()
        _ = try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("Hi") }, via: connector, to: .test)
        let t4 = Date()
        #expect(response.status == 200)
        try await fixture.stop()
        let t5 = Date()
        print("start", t1.timeIntervalSince(t0), "connector", t2.timeIntervalSince(t1), "send1", t3.timeIntervalSince(t2), "send2", t4.timeIntervalSince(t3), "stop", t5.timeIntervalSince(t4))
    }
}
