import APNs
import APNsMockServer
import Foundation
import Testing

/// Bulk sends collect the devices APNs says to stop using, with APNs' timestamps.
@Suite struct TokensToForgetTests {
    static func device(_ index: Int) -> Device {
        try! Device(tokenBytes: [UInt8(3), UInt8(index >> 8), UInt8(index & 0xff)] + Array(repeating: 5, count: 29))
    }

    /// 3,000 devices, 300 unregistered at the mock (each with its own timestamp), 10 misdirected:
    /// exactly those come back, with their timestamps.
    @Test func bulkSendCollectsUnregisteredDevicesWithTheirTimestamps() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let devices = (0..<3_000).map(Self.device)
            var expected: [Device: Date] = [:]
            for index in stride(from: 0, to: 3_000, by: 10) {
                // Whole milliseconds: what APNs sends.
                let since = Date(timeIntervalSince1970: 1_700_000_000 + Double(index) / 1000)
                expected[devices[index]] = since
                fixture.server.reject(deviceToken: devices[index].token, with: .unregistered, timestamp: since)
            }
            for index in [1, 2, 3, 4, 5] {
                fixture.server.reject(deviceToken: devices[index].token, with: .badDeviceToken)
            }
            for index in [11, 12, 13, 14, 15] {
                fixture.server.reject(deviceToken: devices[index].token, with: .deviceTokenNotForTopic)
            }
            fixture.server.reject(deviceToken: devices[21].token, with: .tooManyRequests)  // not a token problem

            let summary = try await send(
                BackgroundNotification(bundleID: Fixture.bundleID), via: connector, to: devices)

            #expect(summary.accepted == 3_000 - 300 - 11)
            #expect(summary.rejected == 311)
            let unregistered = summary.tokensToForget.unregistered
            #expect(unregistered.count == 300)
            func milliseconds(_ date: Date?) -> Int64? {
                date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
            }
            #expect(
                Dictionary(uniqueKeysWithValues: unregistered.map { ($0.device, milliseconds($0.invalidSince)) })
                    == expected.mapValues(milliseconds))
            let misdirected = summary.tokensToForget.misdirected
            #expect(Set(misdirected.map(\.device)) == Set([1, 2, 3, 4, 5, 11, 12, 13, 14, 15].map { devices[$0] }))
            #expect(misdirected.filter { $0.reason == .badDeviceToken }.count == 5)
            #expect(misdirected.filter { $0.reason == .deviceTokenNotForTopic }.count == 5)
        }
    }

    @Test func forgetUnlessRegisteredAfterTheTimestamp() {
        let since = Date(timeIntervalSince1970: 1_700_000_000)
        let entry = TokensToForget.Unregistered(device: .test, invalidSince: since)
        #expect(entry.shouldForget(lastRegisteredAt: nil))
        #expect(entry.shouldForget(lastRegisteredAt: since.addingTimeInterval(-60)))
        #expect(entry.shouldForget(lastRegisteredAt: since))
        #expect(!entry.shouldForget(lastRegisteredAt: since.addingTimeInterval(1)))
        #expect(TokensToForget.Unregistered(device: .test, invalidSince: nil).shouldForget(lastRegisteredAt: Date()))
    }

    @Test func singleSendRejectionsCanBeCollected() {
        var forgotten = TokensToForget()
        forgotten.collect(
            APNsRejection(status: 410, reason: .unregistered, timestamp: Date(timeIntervalSince1970: 5)), for: .test)
        forgotten.collect(APNsRejection(status: 400, reason: .badDeviceToken), for: .test)
        forgotten.collect(APNsRejection(status: 400, reason: .badTopic), for: .test)
        forgotten.collect(APNsRejection(status: 500, reason: nil), for: .test)
        #expect(forgotten.unregistered == [.init(device: .test, invalidSince: Date(timeIntervalSince1970: 5))])
        #expect(forgotten.misdirected == [.init(device: .test, reason: .badDeviceToken)])
        #expect(!forgotten.isEmpty && TokensToForget().isEmpty)
    }
}
