import APNs
import APNsMockServer
import Foundation
import TestFixtures
import Testing

/// `apns send --proxy` and the environment rule, end to end through tinyproxy on 127.0.0.1 (it
/// asks for Basic credentials, so going through it without them is a visible refusal).
@Suite(.serialized) struct ProxyOptionTests {
    static let password = "pr0xy-s3cret"

    @Test func theProxyOptionsAndTheEnvironmentRule() async throws {
        let proxy = try await LocalProxy.tinyproxy(username: "apns", password: Self.password)
        defer { proxy.stop() }
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        // Each `apns` run is a new process that mints its own token: the server must not refuse
        // the second as too frequent (APNs' 20-minute rule), which would depend on the clock's second.
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.minimumTokenUpdateInterval = nil
        let server = try await MockAPNsServer.start(configuration)
        let folder = try CLITests.credentials(key: key, server: server)
        defer { try? FileManager.default.removeItem(at: folder) }
        let send =
            CLITests.tokenArguments(key: key, server: server, folder: folder)
            + ["--topic", "com.example.app", "--token", CLITests.tokenA, "--body", "Hello", "--timeout", "20"]
        let environment = [
            "https_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": "", "NO_PROXY": "",
            "PROXY_PASSWORD": Self.password,
        ]

        // The environment's proxy is used unless --proxy says otherwise: without credentials it refuses.
        let fromEnvironment = try await CLITests.apns(send, environment: environment)
        #expect(fromEnvironment.status == 4, "\(fromEnvironment.stderr)")  // transport failure
        #expect(
            fromEnvironment.stdout.contains("refused the tunnel to APNs with HTTP 407"), "\(fromEnvironment.stdout)")
        #expect(
            fromEnvironment.stdout.contains("not sent") || fromEnvironment.stdout.contains("not-sent"),
            "\(fromEnvironment.stdout)")
        // `--proxy direct` ignores it.
        let direct = try await CLITests.apns(send + ["--proxy", "direct"], environment: environment)
        #expect(direct.status == 0, "\(direct.stdout) \(direct.stderr)")
        // A host no_proxy names (NO_PROXY, the lowercase one being empty) is reached directly.
        var exempt = environment
        exempt["NO_PROXY"] = "127.0.0.1"
        let exempted = try await CLITests.apns(send, environment: exempt)
        #expect(exempted.status == 0, "\(exempted.stdout) \(exempted.stderr)")
        // An explicit proxy with its password from the environment goes through.
        let through = try await CLITests.apns(
            send + ["--proxy", "http://apns@127.0.0.1:\(proxy.port)", "--proxy-password-env", "PROXY_PASSWORD"],
            environment: environment)
        #expect(through.status == 0, "\(through.stdout) \(through.stderr)")
        #expect(through.stdout.hasPrefix("\(CLITests.tokenA) 200"), "\(through.stdout)")
        for run in [fromEnvironment, direct, exempted, through] {
            #expect(!run.stdout.contains(Self.password) && !run.stderr.contains(Self.password))
        }
        try await server.stop()
    }

    @Test func badProxyOptionsAreUsageErrors() async throws {
        let dryRun = ["send", "--dry-run", "--topic", "com.example.app", "--token", "ab", "--body", "x"]
        let cases: [([String], String)] = [
            (["--proxy", "ftp://egress:21"], "unsupported scheme ftp"),
            (["--proxy", "http://apns:\(Self.password)@egress"], "http://apns:***@egress: no port"),
            (["--proxy-password-env", "X"], "--proxy-password-env needs --proxy"),
            (["--proxy", "http://egress:3128", "--proxy-password-env", "X"], "needs a proxy URL with a user"),
        ]
        for (extra, message) in cases {
            let run = try await CLITests.apns(dryRun + extra)
            #expect(run.status == 2, "\(extra): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(extra): \(run.stderr)")
            #expect(!run.stderr.contains(Self.password))
        }
    }
}
