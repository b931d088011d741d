@testable import APNs
import APNsMockServer
import Foundation
import InMemoryLogging
import Logging
import Testing

/// ``TransportConfiguration/memoryTrimInterval``: checked like every interval, off by default, and
/// once per interval in the whole process however many connectors ask (glibc's `malloc_trim`).
@Suite struct MemoryTrimTests {
    @Test func anIntervalUnderASecondIsRefusedWithItsRange() throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        var transport = TransportConfiguration()
        transport.memoryTrimInterval = .milliseconds(500)
        #expect(
            throws: APNsError.validation(
                .invalidTransportSetting(
                    name: "memoryTrimInterval", value: "0.5 seconds; use 1.0 seconds to 24 hours (86400 seconds)"))
        ) {
            _ = try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: .sandbox,
                transport: transport)
        }
        transport.memoryTrimInterval = .seconds(86_401)
        #expect(throws: APNsError.self) {
            _ = try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: .sandbox,
                transport: transport)
        }
        #expect(TransportConfiguration().memoryTrimInterval == nil)
    }

}

extension MemoryTrimTests {
    /// Trims counted against the seconds that passed, in real time: the serial tier runs every suite
    /// named RealTime alone.
    @Suite(.serialized) struct RealTime {
        /// Two connectors asking every second trim about once a second between them, each trim logged
        /// at `debug`; a connector without the setting never trims.
        @Test func twoConnectorsTrimOncePerIntervalBetweenThem() async throws {
            try await Fixture.with { fixture in
                let quiet = try fixture.tokenConnector()
                let logs = InMemoryLogHandler()
                var logger = Logger(label: "apns-test", factory: { _ in logs })
                logger.logLevel = .debug
                var transport = fixture.transport
                transport.memoryTrimInterval = .seconds(1)
                let connectors = try (0..<2).map { _ in
                    try TokenConnector(
                        teamID: fixture.signingKey.teamID, keyID: fixture.signingKey.keyID,
                        key: .pem(fixture.signingKey.privateKeyPEM), environment: fixture.environment,
                        transport: transport, logger: logger)
                }
                let notification = AlertNotification(bundleID: "com.example.app") { Alert("trim") }
                let before = CurlMultiLoop.FreedMemory.trims
                let start = ContinuousClock.now
                for connector in connectors { _ = try await send(notification, via: connector, to: .test) }
                // Real time is the subject: trims are counted against the seconds that pass. The
                // loops pass at least once a second while idle; the first trim comes an interval
                // after a loop starts.
                try await Task.sleep(for: .milliseconds(3_500))
                _ = try await send(notification, via: quiet, to: .test)
                let trims = CurlMultiLoop.FreedMemory.trims - before
                let elapsed = ContinuousClock.now - start
                let lines = logs.entries.filter {
                    $0.message.description == "handed freed heap memory back to the system"
                }
                #if os(Linux)
                    // At least one, and no more than one per second between both loops (unshared,
                    // they would make about twice as many).
                    #expect(trims >= 1)
                    #expect(trims <= Int(elapsed / .seconds(1)) + 1)
                    #expect(lines.count == trims)
                    #expect(
                        lines.allSatisfy { $0.level == .debug && $0.metadata["apns.memory_trim.duration_us"] != nil })
                #else
                    #expect(trims == 0)  // no malloc_trim: the setting does nothing
                    #expect(lines.isEmpty)
                #endif
                for connector in connectors { await connector.shutdown() }
            }
        }
    }
}
