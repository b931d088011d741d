import APNs
import APNsMockServer
import Foundation
import Testing

/// Runs the built `apns` binary, as a user would, and compares its output.
@Suite struct CLITests {
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("apns")
    }

    /// Device tokens of the length APNs issues (32 bytes): the mock refuses shorter ones.
    static let tokenA = String(repeating: "a", count: 64)
    static let tokenB = String(repeating: "b", count: 64)
    static let tokenC = String(repeating: "c", count: 64)

    typealias Run = ChildProcess.Ended

    /// Runs `apns` with `arguments` to its end; `environment` adds to the test process's own.
    static func apns(_ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        try await ChildProcess.run(
            binary, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
    }

    @Test func dryRunPrintsTheExactRequest() async throws {
        let run = try await Self.apns([
            "send", "--dry-run", "--topic", "com.example.app", "--token", "00FC13AD", "--title", "Hi", "--body",
            "There",
            "--badge", "2", "--priority", "5", "--expiration", "0", "--collapse-id", "c1",
            "--apns-id", "7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C", "--data", #"{"z": 1, "a": [true]}"#,
        ])
        #expect(run.status == 0)
        #expect(
            run.stdout == """
                POST /3/device/00fc13ad
                apns-push-type: alert
                apns-topic: com.example.app
                apns-priority: 5
                apns-expiration: 0
                apns-id: 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c
                apns-collapse-id: c1

                {"aps":{"alert":{"title":"Hi","body":"There"},"badge":2},"z":1,"a":[true]}

                """)
    }

    @Test func dryRunWithAPayloadFileKeepsItsBytes() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("payload-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"aps":{"content-available":1},"b":1,"a":2}"#.utf8).write(to: file)
        let run = try await Self.apns([
            "send", "--dry-run", "--push-type", "background", "--topic", "com.example.app", "--token", "ab",
            "--payload", file.path,
        ])
        #expect(run.status == 0)
        #expect(
            run.stdout
                == "POST /3/device/ab\napns-push-type: background\napns-topic: com.example.app\napns-priority: 5\n\n{\"aps\":{\"content-available\":1},\"b\":1,\"a\":2}\n"
        )
    }

    @Test func badInputIsOneMessageAndExitCodeTwo() async throws {
        let badToken = try await Self.apns(["send", "--dry-run", "--topic", "com.example.app", "--token", "xyz"])
        #expect(badToken.status == 2)
        #expect(
            badToken.stderr
                == "apns: Invalid device token: character 1 is not a hex digit: a device token is hex (0-9, a-f), as the app reported it, not a bundle id, user id or a base64 string.\n"
        )
        let badPriority = try await Self.apns([
            "send", "--dry-run", "--push-type", "background", "--priority", "10", "--topic", "a.b", "--token", "ab",
        ])
        #expect(badPriority.status == 2)
        #expect(badPriority.stderr == "apns: Priority 10 is not allowed for background pushes: it is always 5.\n")
        let noCredentials = try await Self.apns(["send", "--topic", "a.b", "--token", "ab", "--body", "x"])
        #expect(noCredentials.status == 2)
        #expect(noCredentials.stderr.hasPrefix("apns: give credentials"))
    }

    /// Every usage error exits 2, negative numbers and values the parser itself refuses included,
    /// and no number traps.
    @Test func everyUsageErrorExitsTwo() async throws {
        let dryRun = ["send", "--dry-run", "--topic", "com.example.app", "--token", "ab", "--body", "x"]
        let cases: [([String], String)] = [
            (["--retries", "-1"], "apns: --retries -1 must be at least 1 (attempts, the first included)\n"),
            (["--timeout", "-5"], "apns: --timeout -5.0 must be from 0.001 to 86400 seconds (24 hours)\n"),
            (["--timeout", "1e16"], "apns: --timeout 1e+16 must be from 0.001 to 86400 seconds (24 hours)\n"),
            (["--timeout", "nan"], "apns: --timeout nan must be from 0.001 to 86400 seconds (24 hours)\n"),
            (
                ["--expiration", "-5"],
                "apns: The expiration -5 is negative. Use Expiration.immediately (0) or a date after 1970.\n"
            ),
        ]
        for (extra, message) in cases {
            let run = try await Self.apns(dryRun + extra)
            #expect(run.status == 2, "\(extra)")
            #expect(run.stderr == message, "\(extra)")
        }
        // What ArgumentParser refuses itself: a missing value, a value of the wrong type, an
        // unknown option, a number too large for its type.
        for extra in [["--retries"], ["--badge", "many"], ["--no-such-option"], ["--badge", "99999999999999999999"]] {
            let run = try await Self.apns(dryRun + extra)
            #expect(run.status == 2, "\(extra)")
            #expect(run.stderr.hasPrefix("Error: "), "\(extra): \(run.stderr)")
        }
        let longToken = try await Self.apns([
            "send", "--dry-run", "--topic", "com.example.app", "--token", String(repeating: "ab", count: 500), "--body",
            "x",
        ])
        #expect(longToken.status == 2)
        #expect(longToken.stderr.contains("at most 512 are accepted (256 bytes)"))
    }

    @Test func sendsThroughTheMockServerAndReportsRejections() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(key.privateKeyPEM.utf8).write(to: folder.appendingPathComponent("AuthKey.p8"))
        try Data(server.certificateAuthorityPEM.utf8).write(to: folder.appendingPathComponent("ca.pem"))
        server.reject(
            deviceToken: Self.tokenB, with: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
        let run = try await Self.apns([
            "send", "--key-file", folder.appendingPathComponent("AuthKey.p8").path, "--key-id", key.keyID, "--team-id",
            key.teamID,
            "--host", "127.0.0.1:\(server.port)", "--ca-file", folder.appendingPathComponent("ca.pem").path,
            "--topic", "com.example.app", "--token", Self.tokenA, "--token", Self.tokenB, "--body", "Hello",
            "--apns-id", "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c",
        ])
        #expect(run.status == 1)
        #expect(
            run.stdout == """
                \(Self.tokenA) 200 apns-id 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c
                \(Self.tokenB) 410 Unregistered apns-id 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c

                """)
        #expect(!run.stdout.contains("PRIVATE") && !run.stderr.contains("PRIVATE"))
        let bodies = Set(server.requests.map(\.bodyText))
        #expect(bodies == [#"{"aps":{"alert":{"body":"Hello"}}}"#])
        try await server.stop()
    }

    /// An accessory's response, from the command line to a server: delivered with exactly the
    /// body the dry run shows.
    @Test func sendsAnAccessoryResponseThroughTheMockServer() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
        let folder = try Self.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try await Self.apns(
            Self.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--token", Self.tokenA, "--push-type", "accessory", "--encrypted-data",
                "ZW5jcnlwdGVk", "--session-identifier", "session-1", "--accessory-key-id", "a2V5", "--message-index",
                "42", "--apns-id", "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "\(Self.tokenA) 200 apns-id 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c\n")
        let request = try #require(server.requests.first)
        #expect(request[header: "apns-push-type"] == "accessory")
        #expect(request[header: "apns-topic"] == "com.example.app.push-type.accessory")
        #expect(
            request.bodyText
                == #"{"aps":{"encryptedData":"ZW5jcnlwdGVk","sessionIdentifier":"session-1","keyID":"a2V5","messageIndex":"42"}}"#
        )
        try await server.stop()
    }

    /// `--key-scope` states what the key may send: an app a topic key does not cover is refused
    /// before any byte, with the fix; a scope that is not one is a usage error.
    @Test func aKeyScopeRefusesWhatTheKeyCannotSendBeforeAnyByte() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
        let folder = try Self.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let send =
            Self.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--token", Self.tokenA, "--body", "Hello",
            ]
        let refused = try await Self.apns(send + ["--key-scope", "topics:sandbox:com.example.other"])
        #expect(refused.status != 0)
        #expect(
            (refused.stdout + refused.stderr).contains(
                "The key KEY0000001 does not cover com.example.app: it is a topic-specific key for com.example.other."),
            "\(refused.stdout)\(refused.stderr)")
        #expect(server.requests.isEmpty)
        let covered = try await Self.apns(send + ["--key-scope", "topics:sandbox:com.example.app,com.example.other"])
        #expect(covered.status == 0, "\(covered.stderr)")
        let bad = try await Self.apns(send + ["--key-scope", "topics:staging:com.example.app"])
        #expect(bad.status == 2)
        #expect(
            bad.stderr
                == "apns: --key-scope topics:staging:com.example.app is not a key scope: give team, team:sandbox, team:production or topics:ENVIRONMENT:BUNDLE[,BUNDLE…] (e.g. topics:production:com.example.shop)\n"
        )
        try await server.stop()
    }

    /// Each `apns send` is a process with a new token for the key; a second run within 20 minutes
    /// meets the token-update limit (the mock's as APNs'): the message names the cause and the fix.
    @Test func aSecondRunWithANewTokenSaysHowToRunAgainstTheMock() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
        let folder = try Self.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let arguments =
            Self.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--token", Self.tokenA, "--body", "Hello",
            ]
        #expect(try await Self.apns(arguments).status == 0)
        // Real time is the subject: a token's `iat` is in seconds, and the mock counts a token with a
        // later one as an update.
        try await Task.sleep(for: .milliseconds(1100))
        let second = try await Self.apns(arguments)
        #expect(second.status == 1)
        let output = second.stdout + second.stderr
        #expect(output.contains("TooManyProviderTokenUpdates"), "\(output)")
        #expect(
            output.contains("against `apns mock-server`, start it with --allow-frequent-token-updates"), "\(output)")
        try await server.stop()
    }

    /// Help reads as prose (no holes where lines were joined) and lists the exit codes.
    @Test func helpTextHasNoHolesAndListsTheExitCodes() async throws {
        for command in [["--help"], ["send", "--help"], ["mock-server", "--help"]] {
            let run = try await Self.apns(command)
            #expect(run.status == 0)
            // The overview and discussion come before USAGE; option help after it is aligned in columns.
            let prose = String(run.stdout[..<(run.stdout.range(of: "USAGE:")?.lowerBound ?? run.stdout.endIndex)])
            #expect(
                prose.range(of: #"\S {3,}\S"#, options: .regularExpression).map { prose[$0] } == nil,
                "\(command): \(prose)")
            if command != ["mock-server", "--help"] {
                #expect(
                    run.stdout.contains(
                        "Exit codes:\n  0  everything was accepted\n  1  APNs rejected at least one notification"),
                    "\(command)")
            }
        }
    }

    @Test func jsonLinesForAcceptedAndRejected() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [key]))
        server.reject(
            deviceToken: Self.tokenB, with: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))
        server.inject(.respond(status: 503, retryAfter: nil, body: ""), requests: 1)
        let folder = try Self.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try await Self.apns(
            Self.tokenArguments(key: key, server: server, folder: folder) + [
                "--topic", "com.example.app", "--token", Self.tokenA, "--token", Self.tokenB, "--body", "Hello",
                "--apns-id", "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c", "--json", "--retries", "3",
            ])
        #expect(run.status == 1)
        #expect(
            run.stdout == """
                {"token":"\(Self.tokenA)","status":200,"apns-id":"7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c","apns-unique-id":"\(server.requests.first { $0.path.hasSuffix(Self.tokenA) }?.responseHeaders.first { $0.name == "apns-unique-id" }?.value ?? "")"}
                {"token":"\(Self.tokenB)","status":410,"apns-id":"7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c","reason":"Unregistered","timestamp":1700000000000}

                """)
        #expect(server.faultsApplied == 1)  // one 503, retried
        try await server.stop()
    }

    @Test func faultsParseFromTheirCommandLineForm() async throws {
        #expect(MockAPNsServer.Fault(parsing: "reset-after:20") == .resetAfterProcessing(requests: 20))
        #expect(MockAPNsServer.Fault(parsing: "close-after:5") == .closeAfterProcessing(requests: 5))
        #expect(MockAPNsServer.Fault(parsing: "never-answer") == .neverAnswer)
        #expect(MockAPNsServer.Fault(parsing: "stall-handshake") == .stallHandshake)
        #expect(MockAPNsServer.Fault(parsing: "delay:1500") == .delay(.milliseconds(1500)))
        #expect(MockAPNsServer.Fault(parsing: "rst-stream:7") == .resetStreams(errorCode: 7))
        #expect(
            MockAPNsServer.Fault(parsing: "rst-stream-after-processing:2") == .resetStreamsAfterProcessing(errorCode: 2)
        )
        #expect(
            MockAPNsServer.Fault(parsing: "goaway:100:0:10:bye")
                == .goAway(afterRequests: 100, errorCode: 0, debugData: "bye", lowerBy: 10))
        #expect(
            MockAPNsServer.Fault(parsing: "status:503:2")
                == .respond(status: 503, retryAfter: 2, body: #"{"reason":"ServiceUnavailable"}"#))
        for bad in [
            "", "reset-after", "reset-after:0", "reset-after:-1", "delay:x", "status:700", "status:503:soon",
            "stall-handshake:1", "explode", "delay:9223372036854775807", "delay:86400001", "never-answer-after:-1",
            "silent-after-idle", "silent-after-idle:86400001", "unrelated-key:1",
        ] {
            #expect(MockAPNsServer.Fault(parsing: bad) == nil, "\(bad)")
        }
        let run = try? await Self.apns(["mock-server", "--fault", "explode"])
        #expect(run?.status == 2)
        #expect(run?.stderr.contains("--fault explode is not a fault") == true)
        #expect(MockAPNsServer.Fault(parsing: "delay:86400000") == .delay(.seconds(86_400)))
        #expect(MockAPNsServer.Fault(parsing: "never-answer-after:10") == .neverAnswerAfter(requests: 10))
        #expect(MockAPNsServer.Fault(parsing: "silent-after-idle:20000") == .silentAfterIdle(.seconds(20)))
        #expect(MockAPNsServer.Fault(parsing: "unrelated-key") == .tiedToAnotherKey)
        // Numbers the mock cannot use are usage errors, not a server on another port.
        for (arguments, message) in [
            (["--port", "99999"], "apns: --port 99999 is not a TCP port; use 1 to 65535, or 0 for a free one\n"),
            (["--port", "-1"], "apns: --port -1 is not a TCP port; use 1 to 65535, or 0 for a free one\n"),
            (["--fault-requests", "-1"], "apns: --fault-requests -1 must be at least 1\n"),
            (["--fault-connections", "0"], "apns: --fault-connections 0 must be at least 1\n"),
        ] {
            let refused = try await Self.apns(["mock-server"] + arguments)
            #expect(refused.status == 2, "\(arguments)")
            #expect(refused.stderr == message, "\(arguments)")
        }
    }

    static func credentials(key: MockCertificateAuthority.SigningKey, server: MockAPNsServer) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(key.privateKeyPEM.utf8).write(to: folder.appendingPathComponent("AuthKey.p8"))
        try Data(server.certificateAuthorityPEM.utf8).write(to: folder.appendingPathComponent("ca.pem"))
        return folder
    }

    static func tokenArguments(
        key: MockCertificateAuthority.SigningKey, server: MockAPNsServer, folder: URL
    ) -> [String] {
        [
            "send", "--key-file", folder.appendingPathComponent("AuthKey.p8").path, "--key-id", key.keyID, "--team-id",
            key.teamID,
            "--host", "127.0.0.1:\(server.port)", "--ca-file", folder.appendingPathComponent("ca.pem").path,
        ]
    }

    @Test func dryRunForEveryPushType() async throws {
        func dryRun(_ extra: [String]) async throws -> String {
            let run = try await Self.apns(["send", "--dry-run", "--topic", "com.example.app", "--token", "ab"] + extra)
            #expect(run.status == 0, "\(extra): \(run.stderr)")
            return run.stdout
        }
        #expect(
            try await dryRun([
                "--push-type", "liveactivity", "--event", "start", "--content-state", #"{"health": 1}"#,
                "--attributes", #"{"hero":"Panda"}"#, "--attributes-type", "HeroAttributes", "--title", "Go",
                "--body", "Now", "--timestamp", "1685952000", "--input-push-token",
            ]) == """
                POST /3/device/ab
                apns-push-type: liveactivity
                apns-topic: com.example.app.push-type.liveactivity
                apns-priority: 10

                {"aps":{"alert":{"title":"Go","body":"Now"},"content-state":{"health":1},"timestamp":1685952000,"event":"start","attributes-type":"HeroAttributes","attributes":{"hero":"Panda"},"input-push-token":1}}

                """)
        #expect(
            try await dryRun([
                "--push-type", "liveactivity", "--event", "end", "--content-state", "{}", "--timestamp", "10",
                "--dismissal-date", "20",
            ])
            .hasSuffix(#"{"aps":{"content-state":{},"timestamp":10,"event":"end","dismissal-date":20}}"# + "\n"))
        #expect(
            try await dryRun(["--push-type", "widgets", "--priority", "5"]).contains(
                "apns-topic: com.example.app.push-type.widgets\napns-priority: 5\n\n{\"aps\":{\"content-changed\":true}}"
            ))
        #expect(try await dryRun(["--push-type", "controls"]).hasSuffix("{\"aps\":{\"content-changed\":true}}\n"))
        #expect(try await dryRun(["--push-type", "location"]).hasSuffix("{\"aps\":{}}\n"))
        #expect(
            try await dryRun(["--push-type", "fileprovider", "--container-identifier", "c", "--domain", "d"]).hasSuffix(
                #"{"container-identifier":"c","domain":"d"}"# + "\n"))
        #expect(
            try await dryRun(["--push-type", "pushtotalk", "--data", #"{"activeSpeaker":"Ana"}"#]).contains(
                "apns-priority: 10\napns-expiration: 0\n"))
        #expect(
            try await dryRun(["--push-type", "voip", "--data", #"{"caller":"Ana"}"#]).hasSuffix(
                #"{"caller":"Ana"}"# + "\n"))
        #expect(
            try await dryRun(["--push-type", "complication", "--data", #"{"high":21}"#]).contains(
                "apns-topic: com.example.app.complication\n"))
        #expect(
            try await dryRun([
                "--push-type", "accessory", "--encrypted-data", "ZW5jcnlwdGVk", "--session-identifier", "session-1",
                "--accessory-key-id", "a2V5", "--message-index", "42", "--apns-id",
                "5a1b0c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d",
            ]) == """
                POST /3/device/ab
                apns-push-type: accessory
                apns-topic: com.example.app.push-type.accessory
                apns-priority: 10
                apns-id: 5a1b0c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d

                {"aps":{"encryptedData":"ZW5jcnlwdGVk","sessionIdentifier":"session-1","keyID":"a2V5","messageIndex":"42"}}

                """)
        let mdm = try await Self.apns([
            "send", "--dry-run", "--push-type", "mdm", "--topic", "com.apple.mgmt.External.x", "--push-magic", "m-1",
            "--token", "ab",
        ])
        #expect(mdm.stdout.hasSuffix("apns-topic: com.apple.mgmt.External.x\napns-priority: 10\n\n{\"mdm\":\"m-1\"}\n"))
    }

    @Test func typeRulesAreUsageErrors() async throws {
        let low = try await Self.apns([
            "send", "--dry-run", "--push-type", "widgets", "--priority", "1", "--topic", "a.b", "--token", "ab",
        ])
        #expect(low.status == 2)
        #expect(low.stderr == "apns: Priority 1 is not allowed for widgets pushes: use 10 or 5.\n")
        let accessory = ["send", "--dry-run", "--push-type", "accessory", "--topic", "a.b", "--token", "ab"]
        let missing = try await Self.apns(accessory + ["--encrypted-data", "AA=="])
        #expect(missing.status == 2)
        #expect(
            missing.stderr
                == "apns: accessory needs --encrypted-data, --session-identifier, --accessory-key-id and --message-index, as the accessory sent them\n"
        )
        let notBase64 = try await Self.apns(
            accessory + [
                "--encrypted-data", "not base64", "--session-identifier", "s", "--accessory-key-id", "AA==",
                "--message-index", "1",
            ])
        #expect(notBase64.status == 2)
        #expect(notBase64.stderr.hasPrefix("apns: The accessory response's encryptedData is not standard base64"))
        let start = try await Self.apns([
            "send", "--dry-run", "--push-type", "liveactivity", "--event", "start", "--content-state", "{}", "--topic",
            "a.b", "--token", "ab",
        ])
        #expect(
            start.stderr
                == "apns: a Live Activity start needs --attributes-type and --attributes\n"
        )
        let badge = try await Self.apns([
            "send", "--dry-run", "--push-type", "voip", "--badge", "1", "--topic", "a.b", "--token", "ab",
        ])
        #expect(badge.status == 2)
        #expect(badge.stderr == "apns: --badge does not apply to voip (it belongs to alert)\n")
        let data = try await Self.apns([
            "send", "--dry-run", "--push-type", "widgets", "--data", "{}", "--topic", "a.b", "--token", "ab",
        ])
        #expect(data.status == 2)
        #expect(
            data.stderr
                == "apns: --data does not apply to widgets (it belongs to alert, background, complication, pushtotalk, voip)\n"
        )
        let unknown = try await Self.apns([
            "send", "--dry-run", "--push-type", "widget", "--topic", "a.b", "--token", "ab",
        ])
        #expect(unknown.stderr.hasPrefix("apns: --push-type widget is not an APNs push type"))
    }

    @Test func channelsAndBroadcastThroughTheMockServer() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.minimumTokenUpdateInterval = nil  // every process mints its own token
        let server = try await MockAPNsServer.start(configuration)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(key.privateKeyPEM.utf8).write(to: folder.appendingPathComponent("AuthKey.p8"))
        try Data(server.certificateAuthorityPEM.utf8).write(to: folder.appendingPathComponent("ca.pem"))
        let connection = [
            "--key-file", folder.appendingPathComponent("AuthKey.p8").path, "--key-id", key.keyID, "--team-id",
            key.teamID,
            "--host", "127.0.0.1:\(server.port)", "--ca-file", folder.appendingPathComponent("ca.pem").path,
        ]
        let created = try await Self.apns(
            ["channels", "create", "--bundle-id", "com.example.app", "--policy", "no-message-stored"] + connection)
        #expect(created.status == 0, "\(created.stderr)")
        let id = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(BroadcastChannel.isBase64(id))
        let read = try await Self.apns(
            ["channels", "read", "--bundle-id", "com.example.app", "--channel", id] + connection)
        #expect(read.stdout == "message-storage-policy 0 push-type LiveActivity\n")
        let sent = try await Self.apns(
            [
                "send", "--channel", id, "--topic", "com.example.app", "--push-type", "liveactivity", "--event",
                "update",
                "--content-state", #"{"score":1}"#, "--timestamp", "1700000000",
            ] + connection)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.hasPrefix("\(id) 200 apns-request-id "))
        #expect(
            server.requests.last?.bodyText
                == #"{"aps":{"content-state":{"score":1},"timestamp":1700000000,"event":"update"}}"#)
        let start = try await Self.apns(
            [
                "send", "--channel", id, "--topic", "com.example.app", "--push-type", "liveactivity", "--event",
                "start",
                "--content-state", "{}",
            ] + connection)
        #expect(start.status == 2)
        #expect(start.stderr == "apns: --channel takes --push-type liveactivity with --event update or end\n")
        #expect(
            try await Self.apns(["channels", "list", "--bundle-id", "com.example.app"] + connection).stdout == id + "\n"
        )
        #expect(
            try await Self.apns(["channels", "delete", "--bundle-id", "com.example.app", "--channel", id] + connection)
                .status
                == 0)
        let missing = try await Self.apns(
            ["channels", "read", "--bundle-id", "com.example.app", "--channel", id] + connection)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("apns: APNs rejected the request: 400 ChannelNotRegistered"))
        try await server.stop()
    }

    @Test func mockServerCommandServesWhatItPrints() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-cmd-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try ChildProcess(
            Self.binary, ["mock-server", "--port", "0", "--dir", folder.path, "--allow-frequent-token-updates"],
            discardingErrors: true)
        defer { server.terminate() }
        // Four lines: listening, ca-file, key-file (with ids), client-cert.
        let text = await server.output { $0.split(separator: "\n").count >= 4 }
        let lines = text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        try #require(lines.count == 4)
        #expect(lines[0][0] == "listening" && lines[0][1].hasPrefix("127.0.0.1:"))
        #expect(lines[1] == ["ca-file", folder.appendingPathComponent("ca.pem").path])
        #expect(lines[2][0] == "key-file" && lines[2][2...] == ["key-id", "KEY0000001", "team-id", "TEAM000001"])
        let sent = try await Self.apns([
            "send", "--key-file", lines[2][1], "--key-id", "KEY0000001", "--team-id", "TEAM000001",
            "--host", lines[0][1], "--ca-file", lines[1][1], "--topic", "com.example.app", "--token", Self.tokenA,
            "--body",
            "Hi",
        ])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.hasPrefix("\(Self.tokenA) 200 apns-id "))
        let viaCertificate = try await Self.apns([
            "send", "--cert", lines[3][1], "--key", lines[3][3], "--host", lines[0][1], "--ca-file", lines[1][1],
            "--topic", "com.example.app", "--token", Self.tokenA, "--push-type", "background",
        ])
        #expect(viaCertificate.status == 0, "\(viaCertificate.stderr)")
    }

    @Test func demoSucceedsEndToEnd() async throws {
        let run = try await Self.apns(["demo"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasSuffix("21 of 21 steps succeeded.\n"))
        #expect(run.stdout.components(separatedBy: "-> 200 apns-id").count == 17)
        #expect(run.stdout.contains("POST /4/broadcasts/apps/com.example.poker\napns-channel-id: "))
        for type in PushType.allCases { #expect(run.stdout.contains("apns-push-type: \(type.rawValue)\n")) }
        #expect(!run.stdout.contains("eyJ"))  // no JWT is printed
    }
}
