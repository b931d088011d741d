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
            --allow-frequent-token-updates to run it more than once against the same server. Like \
            APNs, it answers a device token shorter than 32 bytes (64 hex digits) 400 BadDeviceToken, \
            and a token of another key on a connection 403 UnrelatedKeyIdInToken.

            --fault makes it misbehave on purpose: reset-after:N, close-after:N, never-answer, never-answer-after:N, \
            silent-after-idle:MS, stall-handshake, unrelated-key, delay:MS, rst-stream:CODE, rst-stream-after-processing:CODE, \
            goaway:AFTER:CODE:LOWER-BY[:DEBUG], status:CODE[:RETRY-AFTER].

            --reject TOKEN:REASON[:TIMESTAMP-MS] answers every push to one device token with APNs' \
            rejection for REASON (its status as Apple documents it), e.g. \
            --reject 00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0:Unregistered:1700000000000 for a 410 with the time the token stopped \
            being valid, in milliseconds since 1970 as APNs writes it.
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
        name: .customLong("reject"),
        help: "Refuse pushes to a device token: TOKEN:REASON[:TIMESTAMP-MS] (see the discussion); repeatable.")
    var rejections: [String] = []
    @Flag(
        name: [.customLong("one-stream-until-valid-token"), .customLong("one-stream-until-first-success")],
        help:
            "Start each token connection at one concurrent stream, raised once a push with a valid token arrived, as APNs does (the second name is the flag's earlier one)."
    )
    var oneStreamUntilValidToken = false
    @Flag(
        help: "Answer as APNs' production environment: no apns-unique-id on a success (the sandbox's is the default).")
    var production = false
    @Option(
        name: .customLong("header-table-size"),
        help: "Advertise this HPACK dynamic table size in bytes (0 for none; HTTP/2's default is 4096).")
    var headerTableSize: Int?
    @Option(
        name: .customLong("fault-connections"), parsing: .unconditional,
        help: "Only the first N connections get the fault.")
    var faultConnections: Int?
    @Option(
        name: .customLong("fault-requests"), parsing: .unconditional, help: "Only the first N requests get the fault.")
    var faultRequests: Int?
    @Option(
        name: .customLong("console"),
        help:
            "Also serve the console's API on 127.0.0.1:PORT (0 picks a free one): list, filter, await and clear what the mock received, make devices and remove their app, switch faults (MockConsole)."
    )
    var consolePort: Int?
    @Option(
        name: .customLong("sandbox-key-file"),
        help:
            "With --console: the composer may also send through a token connector to APNs' sandbox with this .p8 key (needs --sandbox-key-id and --sandbox-team-id)."
    )
    var sandboxKeyFile: String?
    @Option(name: .customLong("sandbox-key-id"), help: "The key id of --sandbox-key-file.") var sandboxKeyID: String?
    @Option(name: .customLong("sandbox-team-id"), help: "The team id of --sandbox-key-file.") var sandboxTeamID: String?
    @Option(
        name: .customLong("sandbox-cert"),
        help:
            "With --console: the composer may also send through a certificate connector to APNs' sandbox with this PEM client certificate (needs --sandbox-cert-key)."
    )
    var sandboxCertificate: String?
    @Option(name: .customLong("sandbox-cert-key"), help: "The PEM private key of --sandbox-cert.")
    var sandboxCertificateKey: String?

    func run() async throws {
        try await Failure.reporting {
            guard (0...65_535).contains(port) else {
                throw UsageError("--port \(port) is not a TCP port; use 1 to 65535, or 0 for a free one")
            }
            if let consolePort, !(0...65_535).contains(consolePort) {
                throw UsageError("--console \(consolePort) is not a TCP port; use 1 to 65535, or 0 for a free one")
            }
            if consolePort == nil, sandboxKeyFile != nil || sandboxCertificate != nil {
                throw UsageError(
                    "--sandbox-key-file and --sandbox-cert are for the console's composer: give --console too")
            }
            if let headerTableSize, !(0...65_536).contains(headerTableSize) {
                throw UsageError("--header-table-size \(headerTableSize) must be 0 to 65536 bytes")
            }
            for (flag, value) in [("--fault-connections", faultConnections), ("--fault-requests", faultRequests)] {
                if let value, value < 1 { throw UsageError("\(flag) \(value) must be at least 1") }
            }
            let injected = try fault.map { text throws -> MockAPNsServer.Fault in
                guard let parsed = MockAPNsServer.Fault(parsing: text) else {
                    throw UsageError(
                        "--fault \(text) is not a fault; use reset-after:N, close-after:N, never-answer, never-answer-after:N, silent-after-idle:MS, stall-handshake, unrelated-key, delay:MS, rst-stream:CODE, rst-stream-after-processing:CODE, goaway:AFTER:CODE:LOWER-BY[:DEBUG] or status:CODE[:RETRY-AFTER] (delay and silent-after-idle at most 86400000 ms)"
                    )
                }
                return parsed
            }
            let scripted = try rejections.map { text throws -> ScriptedRejection in
                guard let parsed = ScriptedRejection(parsing: text) else {
                    throw UsageError(
                        "--reject \(text) is not TOKEN:REASON[:TIMESTAMP-MS]; use a device token in hex, APNs' reason as it writes it and, for a 410, the milliseconds since 1970, e.g. 00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0:Unregistered:1700000000000"
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
            let sandbox = try sandboxConnectors()
            let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
            // The composer's own key: its tokens never count against the printed key's (the mock,
            // like APNs, takes a new token for a key at most every 20 minutes).
            let consoleKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "CONSOLE001")
            let authority = try MockCertificateAuthority()
            var configuration = MockAPNsServer.Configuration(signingKeys: [signingKey, consoleKey])
            configuration.certificateAuthority = authority
            configuration.port = port
            if allowFrequentTokenUpdates { configuration.minimumTokenUpdateInterval = nil }
            configuration.strict = strict
            configuration.oneStreamUntilValidToken = oneStreamUntilValidToken
            configuration.headerTableSize = headerTableSize
            configuration.environment = production ? .production : .sandbox
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
            var connectors = sandbox
            var destinations: [ConsoleAPI.Destination] = []
            if consolePort != nil {
                var transport = TransportConfiguration()
                transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
                let environment = APNsEnvironment.custom(host: server.host, port: server.port, name: "mock")
                let mock = [
                    AnyConnector(
                        try TokenConnector(
                            teamID: consoleKey.teamID, keyID: consoleKey.keyID, key: .pem(consoleKey.privateKeyPEM),
                            environment: environment, transport: transport)),
                    AnyConnector(
                        try CertificateConnector(
                            certificate: .pem(client.certificatePEM), privateKey: .pem(client.privateKeyPEM),
                            environment: environment, transport: transport)),
                ]
                connectors += mock
                destinations.append(ConsoleAPI.Destination(name: "mock", connectors: mock))
                if !sandbox.isEmpty {
                    destinations.append(ConsoleAPI.Destination(name: "sandbox", connectors: sandbox))
                }
            } else if !sandbox.isEmpty {
                throw UsageError(
                    "--sandbox-key-file and --sandbox-cert are for the console's composer: give --console too")
            }
            let console = try await consolePort.asyncMap {
                try await MockConsole.start(serving: server, port: $0, destinations: destinations)
            }
            if let injected { server.inject(injected, connections: faultConnections, requests: faultRequests) }
            for rejection in scripted {
                server.reject(deviceToken: rejection.token, with: rejection.reason, timestamp: rejection.timestamp)
            }
            // Written unbuffered, so a test harness reading a pipe sees the lines at once.
            let lines =
                [
                    "listening \(server.host):\(server.port)",
                    "ca-file \(folder)/ca.pem",
                    "key-file \(folder)/AuthKey_\(signingKey.keyID).p8 key-id \(signingKey.keyID) team-id \(signingKey.teamID)",
                    "client-cert \(folder)/client.pem client-key \(folder)/client-key.pem bundle-id \(bundleID)",
                ] + (console.map { ["console http://\($0.host):\($0.port)"] } ?? [])
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            // Until SIGINT or SIGTERM; then the folder is removed if this process made it (a --dir
            // the caller named is the caller's), and the server stops.
            await Self.untilInterrupted()
            try? await console?.stop()
            for connector in connectors { await connector.shutdown(gracePeriod: .zero) }
            try? await server.stop()
            if dir == nil { try? FileManager.default.removeItem(atPath: folder) }
        }
    }

    /// The connectors to APNs' sandbox that `--sandbox-key-file` and `--sandbox-cert` describe.
    func sandboxConnectors() throws -> [AnyConnector] {
        var connectors: [AnyConnector] = []
        if let sandboxKeyFile {
            guard let sandboxKeyID, let sandboxTeamID else {
                throw UsageError("--sandbox-key-file needs --sandbox-key-id and --sandbox-team-id")
            }
            connectors.append(
                AnyConnector(
                    try TokenConnector(
                        teamID: sandboxTeamID, keyID: sandboxKeyID, key: .file(path: sandboxKeyFile),
                        environment: .sandbox)))
        }
        if let sandboxCertificate {
            guard let sandboxCertificateKey else { throw UsageError("--sandbox-cert needs --sandbox-cert-key") }
            connectors.append(
                AnyConnector(
                    try CertificateConnector(
                        certificate: .file(path: sandboxCertificate), privateKey: .file(path: sandboxCertificateKey),
                        environment: .sandbox)))
        }
        return connectors
    }

    /// `--reject TOKEN:REASON[:TIMESTAMP-MS]`.
    struct ScriptedRejection: Equatable {
        var token: String
        var reason: APNsRejection.Reason
        var timestamp: Date?

        /// Nil unless the token is hex, the reason is a word of letters and the timestamp (when
        /// given) is a count of milliseconds that a `Date` holds to the millisecond.
        init?(parsing text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, !parts[0].isEmpty,
                parts[0].allSatisfy({ $0.isASCII && $0.isHexDigit }),
                !parts[1].isEmpty, parts[1].allSatisfy({ $0.isASCII && $0.isLetter })
            else { return nil }
            token = parts[0].lowercased()
            reason = APNsRejection.Reason(rawValue: String(parts[1]))
            if parts.count == 3 {
                guard let milliseconds = Int64(parts[2]), (0...253_402_300_799_999).contains(milliseconds) else {
                    return nil  // at most the last millisecond of the year 9999
                }
                timestamp = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            }
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

extension Optional {
    /// `map` with an asynchronous transform.
    fileprivate func asyncMap<Mapped>(_ transform: (Wrapped) async throws -> Mapped) async rethrows -> Mapped? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
