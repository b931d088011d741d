import APNs
import APNsMockServer
import ArgumentParser
import Foundation

/// `apns mock-server`: the mock APNs in the foreground, for integration tests in any language.
struct MockServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-server",
        abstract: "Run the mock APNs server in the foreground (HTTP/2 + TLS on 127.0.0.1).",
        discussion: """
            Writes a generated CA, a .p8 signing key the server accepts and a client certificate for \
            --bundle-id into --dir (a new temporary folder by default), prints their paths, and serves \
            until interrupted.

            Like APNs, it accepts a new provider token for a key at most every 20 minutes (429 \
            TooManyProviderTokenUpdates); each `apns send` process makes a new token, so give \
            --allow-frequent-token-updates to run it more than once against the same server.

            --fault makes it misbehave on purpose: reset-after:N, close-after:N, never-answer, never-answer-after:N, \
            stall-handshake, delay:MS, rst-stream:CODE, rst-stream-after-processing:CODE, \
            goaway:AFTER:CODE:LOWER-BY[:DEBUG], status:CODE[:RETRY-AFTER].
            """)

    @Option(parsing: .unconditional, help: "Port to listen on; 0 picks a free one.") var port = 0
    @Option(name: .customLong("client-ca"), help: "Also accept client certificates signed by this CA (PEM).")
    var clientCA: String?
    @Option(name: .customLong("bundle-id"), help: "Bundle id of the generated client certificate.") var bundleID =
        "com.example.app"
    @Option(help: "Folder for the generated credentials.") var dir: String?
    @Flag(
        name: .customLong("allow-frequent-token-updates"),
        help: "Accept a new token for the key at any time (for clients that start a process per push).")
    var allowFrequentTokenUpdates = false
    @Flag(
        help:
            "Also refuse what APNs lets through but no correct client sends: no apns-push-type, unknown keys inside aps."
    )
    var strict = false
    @Option(help: "Misbehave on purpose (see the discussion).") var fault: String?
    @Option(
        name: .customLong("fault-connections"), parsing: .unconditional,
        help: "Only the first N connections get the fault.")
    var faultConnections: Int?
    @Option(
        name: .customLong("fault-requests"), parsing: .unconditional, help: "Only the first N requests get the fault.")
    var faultRequests: Int?

    func run() async throws {
        try await Failure.reporting {
            guard (0...65_535).contains(port) else {
                throw UsageError("--port \(port) is not a TCP port; use 1 to 65535, or 0 for a free one")
            }
            for (flag, value) in [("--fault-connections", faultConnections), ("--fault-requests", faultRequests)] {
                if let value, value < 1 { throw UsageError("\(flag) \(value) must be at least 1") }
            }
            let injected = try fault.map { text throws -> MockAPNsServer.Fault in
                guard let parsed = MockAPNsServer.Fault(parsing: text) else {
                    throw UsageError(
                        "--fault \(text) is not a fault; use reset-after:N, close-after:N, never-answer, never-answer-after:N, stall-handshake, delay:MS, rst-stream:CODE, rst-stream-after-processing:CODE, goaway:AFTER:CODE:LOWER-BY[:DEBUG] or status:CODE[:RETRY-AFTER] (delay at most 86400000 ms)"
                    )
                }
                return parsed
            }
            let folder =
                dir
                ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                    "apns-mock-\(UUID().uuidString.prefix(8))"
                ).path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
            let authority = try MockCertificateAuthority()
            var configuration = MockAPNsServer.Configuration(signingKeys: [signingKey])
            configuration.certificateAuthority = authority
            configuration.port = port
            if allowFrequentTokenUpdates { configuration.minimumTokenUpdateInterval = nil }
            configuration.strict = strict
            if let clientCA {
                guard let pem = FileManager.default.contents(atPath: clientCA) else {
                    throw UsageError("cannot read --client-ca \(clientCA)")
                }
                configuration.additionalClientCertificateAuthorities = [String(decoding: pem, as: UTF8.self)]
            }
            let client = try authority.issueClientCertificate(bundleID: bundleID)
            let files = [
                ("ca.pem", authority.certificatePEM), ("AuthKey_\(signingKey.keyID).p8", signingKey.privateKeyPEM),
                ("client.pem", client.certificatePEM), ("client-key.pem", client.privateKeyPEM),
            ]
            for (name, text) in files {
                try Data(text.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
            }
            let server = try await MockAPNsServer.start(configuration)
            if let injected { server.inject(injected, connections: faultConnections, requests: faultRequests) }
            // Written unbuffered, so a test harness reading a pipe sees the lines at once.
            let lines = [
                "listening \(server.host):\(server.port)",
                "ca-file \(folder)/ca.pem",
                "key-file \(folder)/AuthKey_\(signingKey.keyID).p8 key-id \(signingKey.keyID) team-id \(signingKey.teamID)",
                "client-cert \(folder)/client.pem client-key \(folder)/client-key.pem bundle-id \(bundleID)",
            ]
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            // Until SIGINT or SIGTERM; then the folder is removed if this process made it (a --dir
            // the caller named is the caller's), and the server stops.
            await Self.untilInterrupted()
            try? await server.stop()
            if dir == nil { try? FileManager.default.removeItem(atPath: folder) }
        }
    }

    /// Returns on the first SIGINT or SIGTERM, which no longer end the process on their own.
    static func untilInterrupted() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Locked(false)
            var sources: [any DispatchSourceSignal] = []
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    let first = once.withLock { fired in
                        defer { fired = true }
                        return !fired
                    }
                    if first { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            // The sources live as long as the process: it ends soon after the first signal.
            Self.signalSources.withLock { $0 = sources }
        }
    }

    private static let signalSources = Locked<[any DispatchSourceSignal]>([])
}
