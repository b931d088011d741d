import APNs
import APNsMockServer
import Foundation
import Testing

/// `apns send --tokens-file`: the bulk path, its progress display and summary. One test at a time:
/// each sends thousands of pushes through the debug-built CLI and mock server.
@Suite(.serialized) struct TokensFileTests {
    #if os(Linux)
        static let hasUtilLinuxScript = FileManager.default.isExecutableFile(atPath: "/usr/bin/script")
    #else
        static let hasUtilLinuxScript = false  // BSD script(1) takes other arguments
    #endif

    /// A tokens file of `count` distinct tokens, two of which the server rejects.
    static func tokensFile(count: Int, server: MockAPNsServer, folder: URL) throws -> (URL, [String]) {
        let tokens = (0..<count).map { String(format: "%08x", $0) + String(repeating: "ab", count: 28) }
        let file = folder.appendingPathComponent("tokens.txt")
        try Data(("# device tokens\n" + tokens.joined(separator: "\n") + "\n\n").utf8).write(to: file)
        server.reject(deviceToken: tokens[7], with: .unregistered)
        server.reject(deviceToken: tokens[count - 1], with: .badDeviceToken)
        return (file, tokens)
    }

    /// Tokens from a file through the bulk path. Not a terminal, so the progress is plain lines on
    /// standard error; the summary ends standard output. A thousand tokens prove the behaviour (the
    /// debug-built CLI and mock send a few hundred a second); how fast 100,000 or a million go is
    /// the benchmark's business.
    @Test func tokensFileShowsProgressAndSummary() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.recordsRequests = false
        configuration.threads = 2
        let server = try await MockAPNsServer.start(configuration)
        let folder = try CLITests.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 1_000
        let (file, tokens) = try Self.tokensFile(count: count, server: server, folder: folder)
        let run = try await CLITests.apns(
            CLITests.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--tokens-file", file.path, "--body", "Hello", "--timeout", "120",
            ])
        #expect(run.status == 1)  // two rejections
        let lines = run.stdout.split(separator: "\n").map(String.init)
        // Rejections as they come, then the summary.
        #expect(lines.contains("\(tokens[7]) 410 Unregistered"))
        #expect(lines.contains("\(tokens[count - 1]) 400 BadDeviceToken"))
        let summary = Array(lines.suffix(6))
        #expect(summary.count == 6)
        #expect(summary.first?.hasPrefix("sent 1000 of 1000 in ") == true, "\(summary)")
        #expect(summary.dropFirst().first == "998 delivered")
        #expect(summary.dropFirst(2).first == "2 rejected (BadDeviceToken 1, Unregistered 1)")
        #expect(summary.dropFirst(3).first == "0 failed")
        #expect(
            summary.dropFirst(4).first?.range(
                of: #"^latency p50 [0-9.]+ ms, p99 [0-9.]+ ms$"#, options: .regularExpression) != nil, "\(summary)")
        #expect(summary.last?.range(of: #"^elapsed [0-9.]+ s$"#, options: .regularExpression) != nil)
        // Plain progress lines (not a terminal): at least the final one.
        let progress = run.stderr.split(separator: "\n").filter { $0.hasPrefix("progress ") }
        #expect(progress.last?.hasPrefix("progress 1000/1000 100% ") == true, "\(run.stderr.suffix(300))")
        #expect(progress.allSatisfy { $0.contains("/s ETA ") })
        #expect(!run.stderr.contains("\u{1B}"))
        try await server.stop()
    }

    /// `--json` with a tokens file: exactly one JSON line per device and nothing else.
    @Test func tokensFileWithJSONPrintsOneLinePerDevice() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.recordsRequests = false
        let server = try await MockAPNsServer.start(configuration)
        let folder = try CLITests.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (file, tokens) = try Self.tokensFile(count: 1_000, server: server, folder: folder)
        let run = try await CLITests.apns(
            CLITests.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--tokens-file", file.path, "--push-type", "background", "--json",
            ])
        #expect(run.status == 1)
        #expect(run.stderr == "")
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        #expect(lines.count == tokens.count)
        let objects = try lines.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(Set(objects.compactMap { $0["token"] as? String }) == Set(tokens))
        #expect(objects.filter { $0["status"] as? Int == 200 }.count == tokens.count - 2)
        #expect(objects.first { $0["token"] as? String == tokens[7] }?["reason"] as? String == "Unregistered")
        try await server.stop()
    }

    /// `--unregistered-out`: the tokens APNs answered 410 for, with APNs' timestamps, as CSV and
    /// as JSON lines.
    @Test func unregisteredOutWritesTheUnregisteredTokens() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.recordsRequests = false
        configuration.minimumTokenUpdateInterval = nil  // two processes, each with its own token
        let server = try await MockAPNsServer.start(configuration)
        let folder = try CLITests.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (file, tokens) = try Self.tokensFile(count: 1_000, server: server, folder: folder)
        var expected: [String: Int64] = [:]
        for index in stride(from: 0, to: 1_000, by: 10) where index != 0 {
            let milliseconds = Int64(1_700_000_000_000 + index)
            expected[tokens[index]] = milliseconds
            server.reject(
                deviceToken: tokens[index], with: .unregistered,
                timestamp: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
        server.reject(
            deviceToken: tokens[7], with: .unregistered, timestamp: Date(timeIntervalSince1970: 1_600_000_000))
        expected[tokens[7]] = 1_600_000_000_000
        let csv = folder.appendingPathComponent("gone.csv")
        let run = try await CLITests.apns(
            CLITests.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--tokens-file", file.path, "--push-type", "background", "--json",
                "--unregistered-out", csv.path,
            ])
        #expect(run.status == 1)
        let rows = try String(contentsOf: csv, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(rows.first == "token,timestamp")
        var written: [String: Int64] = [:]
        for row in rows.dropFirst() {
            let fields = row.split(separator: ",").map(String.init)
            #expect(fields.count == 2)
            written[fields[0]] = Int64(fields[1])
        }
        #expect(written == expected)  // 99 + tokens[7]; BadDeviceToken (the last token) is not among them

        let jsonl = folder.appendingPathComponent("gone.jsonl")
        let again = try await CLITests.apns(
            CLITests.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--tokens-file", file.path, "--push-type", "background",
                "--unregistered-out", jsonl.path,
            ])
        #expect(again.status == 1)
        let lines = try String(contentsOf: jsonl, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == expected.count)
        for line in lines {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let token = try #require(object["token"] as? String)
            #expect((object["timestamp"] as? NSNumber)?.int64Value == expected[token], "\(line)")
        }
        try await server.stop()
    }

    /// On a terminal (a pseudo-terminal from `script`), the bar is redrawn in place with rate and ETA.
    @Test(.enabled(if: Self.hasUtilLinuxScript, "needs util-linux `script -qefc` for a pseudo-terminal (Linux)"))
    func tokensFileOnATerminalDrawsABar() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.recordsRequests = false
        let server = try await MockAPNsServer.start(configuration)
        let folder = try CLITests.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (file, _) = try Self.tokensFile(count: 3_000, server: server, folder: folder)
        let command =
            ([CLITests.binary.path] + CLITests.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--tokens-file", file.path, "--body", "Hello",
            ]).map { "'\($0)'" }.joined(separator: " ")
        let ran = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qefc", command, "/dev/null"])
        let output = ran.stdout
        #expect(ran.status == 1)
        #expect(output.contains("\r\u{1B}[2K["))
        #expect(output.contains("█"))
        #expect(output.contains("3000/3000 100% "))
        #expect(output.contains("2998 delivered"))
        try await server.stop()
    }
}
