import APNs
import APNsMockServer
import Foundation
import TestFixtures
import Testing

/// APNs' manners under errors, as the mock plays them (``MockAPNsServer/ErrorLimit``): too many
/// error answers end a connection, sooner for BadDeviceToken; 410 Unregistered does not count.
@Suite struct ErrorLimitTests {
    static func device(_ index: Int) throws -> Device {
        try Device(token: String(format: "%064x", index))
    }

    static func sendEach(_ count: Int, from start: Int, via connector: TokenConnector) async throws {
        for index in start..<(start + count) {
            _ = try? await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: Self.device(index))
        }
    }

    @Test func errorsEndAConnectionAndUnregisteredDoesNotCount() async throws {
        try await Fixture.with(adjust: { $0.errorLimit = .init(errors: 20, badDeviceTokens: 5) }) { fixture in
            for index in 0..<30 {
                fixture.server.reject(deviceToken: try Self.device(index).token, with: .unregistered)
            }
            for index in 30..<35 {
                fixture.server.reject(deviceToken: try Self.device(index).token, with: .badDeviceToken)
            }
            for index in 35..<55 {
                fixture.server.reject(deviceToken: try Self.device(index).token, with: .deviceTokenNotForTopic)
            }
            let connector = try fixture.tokenConnector()
            try await Self.sendEach(30, from: 0, via: connector)
            #expect(fixture.server.connectionsEndedForErrors == 0)  // 30 × 410: not errors
            try await Self.sendEach(5, from: 30, via: connector)
            #expect(fixture.server.connectionsEndedForErrors == 1)  // the fifth BadDeviceToken
            try await Self.sendEach(20, from: 35, via: connector)
            #expect(fixture.server.connectionsEndedForErrors == 2)  // the twentieth other error
            #expect(fixture.server.requests.count == 55)  // each answered once, none lost
            #expect(connector.connectionsOpened == 2)  // the second end came with the last send
            await connector.shutdown(gracePeriod: .zero)
        }
    }
}
