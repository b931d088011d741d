import Foundation
import Testing

/// `apns mock-server` run as a process, as a test suite in another language runs it.
@Suite struct MockServerCommandTests {
    @Test func refusesARejectionItCannotScript() async throws {
        for bad in [
            "aaaa", "aaaa:", ":Unregistered", "zz:Unregistered", "aaaa:Bad Reason", "aaaa:Unregistered:soon",
            "aaaa:Unregistered:-1", "aaaa:Unregistered:1:2", "aaaa:Unregistered:253402300800000",
        ] {
            let run = try await CLITests.apns(["mock-server", "--reject", bad])
            #expect(run.status == 2, "\(bad)")
            #expect(
                run.stderr.hasPrefix("apns: --reject \(bad) is not TOKEN:REASON[:TIMESTAMP-MS];"),
                "\(bad): \(run.stderr)")
        }
    }

    /// A 410 with its timestamp, scripted from the command line, reaches `apns send` as APNs
    /// writes it; the other token is accepted, without the sandbox's apns-unique-id, on a server
    /// that answers as production and starts its connections at one stream.
    @Test func answersAScriptedRejectionWithItsTimestamp() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try ChildProcess(
            CLITests.binary,
            [
                "mock-server", "--dir", folder.path, "--reject",
                CLITests.tokenA.uppercased() + ":Unregistered:1700000000123",
                "--one-stream-until-valid-token", "--production",
            ],
            discardingErrors: true)
        defer { server.terminate() }
        // The lines it prints once it listens: "listening HOST:PORT", "ca-file PATH", "key-file PATH
        // key-id ID team-id ID", "client-cert PATH …".
        let printed = await server.output { $0.contains("client-cert ") }
        let words = printed.split(whereSeparator: \.isWhitespace).map(String.init)
        func value(after word: String) throws -> String {
            let index = try #require(words.firstIndex(of: word), "\(word) in \(printed)")
            return words[index + 1]
        }
        let run = try await CLITests.apns([
            "send", "--key-file", try value(after: "key-file"), "--key-id", try value(after: "key-id"),
            "--team-id", try value(after: "team-id"), "--host", try value(after: "listening"),
            "--ca-file", try value(after: "ca-file"), "--topic", "com.example.app", "--token", CLITests.tokenA,
            "--token",
            CLITests.tokenB, "--body", "Hello", "--json",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(run.stdout)")
        #expect(
            lines.contains {
                $0.hasPrefix(#"{"token":"\#(CLITests.tokenA)","status":410,"#)
                    && $0.hasSuffix(#""reason":"Unregistered","timestamp":1700000000123}"#)
            }, "\(run.stdout)")
        #expect(
            lines.contains {
                $0.hasPrefix(#"{"token":"\#(CLITests.tokenB)","status":200,"#) && !$0.contains("apns-unique-id")
            },
            "\(run.stdout)")
    }
}
