import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
        let printed = Printed(await server.output { $0.contains("client-cert ") })
        let run = try await CLITests.apns(
            try printed.sendArguments() + [
                "--topic", "com.example.app", "--token", CLITests.tokenA, "--token", CLITests.tokenB, "--body", "Hello",
                "--json",
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

    /// The console's composer sends through the mock's own connectors, a token's and a
    /// certificate's; its tokens are its own key's, so `apns send` with the printed key is still
    /// accepted after it (the mock, like APNs, takes a new token for a key at most every 20
    /// minutes). A sandbox credential without the console is refused.
    @Test func theComposerSendsThroughBothConnectorKinds() async throws {
        let refused = try await CLITests.apns(["mock-server", "--sandbox-key-file", "AuthKey.p8"])
        #expect(refused.status == 2 && refused.stderr.contains("give --console too"), "\(refused.stderr)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try ChildProcess(
            CLITests.binary, ["mock-server", "--dir", folder.path, "--console", "0"], discardingErrors: true)
        defer { server.terminate() }
        let printed = Printed(await server.output { $0.contains("console http") })
        for kind in ["token", "certificate"] {
            var request = URLRequest(
                url: try #require(URL(string: try printed.value(after: "console") + "/api/compose")))
            request.httpMethod = "POST"
            request.httpBody = Data(
                #"{"notification": {"push-type": "alert", "bundle-id": "com.example.app", "alert": "Hi"}, "device": "\#(CLITests.tokenA)", "connector": "\#(kind)", "send": "mock"}"#
                    .utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect((object["sent"] as? [String: Any])?["status"] as? Int == 200, "\(kind): \(object)")
            #expect(object["connector"] as? String == kind)
        }
        let run = try await CLITests.apns(
            try printed.sendArguments() + [
                "--topic", "com.example.app", "--token", CLITests.tokenA, "--body", "Hello",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        // With a sandbox credential the composer offers APNs' sandbox too (not sent to here: the
        // tests reach loopback only).
        let withSandbox = try ChildProcess(
            CLITests.binary,
            [
                "mock-server", "--console", "0", "--sandbox-key-file", try printed.value(after: "key-file"),
                "--sandbox-key-id", "KEY0000001", "--sandbox-team-id", "TEAM000001",
            ], discardingErrors: true)
        defer { withSandbox.terminate() }
        let second = Printed(await withSandbox.output { $0.contains("console http") })
        let (data, _) = try await URLSession.shared.data(
            from: try #require(URL(string: try second.value(after: "console") + "/api/push-types")))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let destinations = (object["destinations"] as? [[String: Any]])?.map {
            "\($0["name"] ?? "")=\(($0["connectors"] as? [String] ?? []).joined(separator: "+"))"
        }
        #expect(destinations == ["mock=certificate+token", "sandbox=token"])
    }
}

/// What `apns mock-server` prints once it listens: "listening HOST:PORT", "ca-file PATH", "key-file
/// PATH key-id ID team-id ID", "client-cert PATH …", and "console URL" with `--console`.
struct Printed {
    let text: String
    let words: [String]

    init(_ text: String) {
        self.text = text
        words = text.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// `apns send` with the printed key, to the printed address, trusting the printed CA.
    func sendArguments() throws -> [String] {
        [
            "send", "--key-file", try value(after: "key-file"), "--key-id", try value(after: "key-id"),
            "--team-id", try value(after: "team-id"), "--host", try value(after: "listening"),
            "--ca-file", try value(after: "ca-file"),
        ]
    }

    /// The word printed after `word`.
    func value(after word: String) throws -> String {
        let index = try #require(words.firstIndex(of: word), "\(word) in \(text)")
        return words[index + 1]
    }
}
