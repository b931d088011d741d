import APNsMockServer
import Foundation
import Testing

/// The `apns` command's deadline as it happens, in real time: a timeout is libcurl's, so this suite
/// measures libcurl's timing through a real process and runs in the serial tier, alone.
@Suite struct CLITimingTests {
    /// The judged case: a server that stops answering. One line per device within the timeout plus
    /// slack, each saying the push may have been delivered, and a non-zero exit.
    @Test func jsonTimeoutAgainstAServerThatStopsAnswering() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
        server.inject(.neverAnswer)
        let folder = try CLITests.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let start = ContinuousClock.now
        let run = try await CLITests.apns(
            CLITests.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--token", CLITests.tokenA, "--token", CLITests.tokenB, "--token",
                CLITests.tokenC,
                "--body",
                "Hello",
                "--json", "--timeout", "2",
            ])
        let elapsed = ContinuousClock.now - start
        #expect(run.status == 4)
        #expect(elapsed < .seconds(4), "took \(elapsed)")  // 2 s + process start and TLS
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        for (line, token) in zip(lines, [CLITests.tokenA, CLITests.tokenB, CLITests.tokenC]) {
            // The first request to time out shows the connection stalled, and the transport closes
            // it: a request still on it then fails as connection-lost. Either way, delivery unknown.
            let timedOut = line.hasPrefix(
                #"{"token":"\#(token)","error":{"kind":"timeout","delivery":"unknown","message":"Transport failure (timeout, curl 28)"#
            )
            // (The curl code of a connection-lost outcome is what libcurl reported last: 18 on
            // 7.88; 28 or 55 on 8.14.)
            let lost = line.hasPrefix(
                #"{"token":"\#(token)","error":{"kind":"connection-lost","delivery":"unknown","message":"Transport failure (connection-lost, curl "#
            )
            #expect(timedOut || lost, "\(line)")
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["token"] as? String == token)
        }
        try await server.stop()
    }
}
