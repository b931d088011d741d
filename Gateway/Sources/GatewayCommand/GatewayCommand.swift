import APNs
import APNsGateway
import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import OTel
import Prometheus
import ServiceLifecycle
import Tracing
import UnixSignals

/// `apns-gateway`: the push gateway's server, and its key management.
@main
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-gateway",
        abstract:
            "An HTTP push gateway in front of APNs: a durable queue (SQLite), API keys per app, outcomes and unregistered tokens.",
        subcommands: [
            Serve.self, AddKey.self, ListKeys.self, RevokeKey.self, CredentialCommand.self, AppCommand.self,
            WebhookCommand.self,
        ],
        defaultSubcommand: Serve.self)

    /// Parses the command line completed from the environment and the configuration file
    /// (``Settings``): a setting that cannot be used exits 64 with what is wrong.
    static func main() async {
        let arguments: [String]
        do {
            arguments = try await Settings.complete(
                Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            Foundation.exit(64)
        }
        await main(arguments)
    }
}

/// Where the queue lives.
struct DatabaseOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A JSON file of settings, the long options' names as keys ({\"lease-seconds\": 60}); APNS_GATEWAY_<OPTION> environment variables come before it, flags before both. No secrets in it.",
            valueName: "file"))
    var config: String?
    @Option(
        help:
            "The queue: a SQLite file (created if missing), or postgres://user[:password]@host[:port]/database to share it between instances."
    )
    var database = "apns-gateway.sqlite"
    @Option(
        name: .customLong("database-wait-seconds"),
        help: "How long to wait for PostgreSQL at start-up before giving up with an error (1 to 3600).")
    var databaseWaitSeconds = 30
    @Option(
        name: .customLong("database-connections"),
        help:
            "Connections to PostgreSQL this process may open (1 to 1000): every instance's together must stay under the server's max_connections, 100 by default."
    )
    var databaseConnections = 20
    @Option(
        name: .customLong("database-password-file"),
        help:
            "A file holding the PostgreSQL database's password, its URL then given without one (a container secret, a systemd credential): the password stays out of the environment and the process's arguments. One trailing newline is ignored."
    )
    var databasePasswordFile: String?
    @Option(
        name: .customLong("credential-key-file"),
        help:
            "The key-encryption key that seals the credentials kept in the queue: a file of 32 bytes, raw or base64 (`head -c 32 /dev/urandom | base64 > kek`). Never store it with the database."
    )
    var credentialKeyFile: String?
    @Option(
        name: .customLong("credential-key-env"),
        help: "Environment variable holding the key-encryption key, base64 (instead of --credential-key-file).")
    var credentialKeyEnvironment: String?

    /// The vault of the key-encryption key given, or nil when none was.
    func vault() throws -> CredentialVault? {
        switch (credentialKeyFile, credentialKeyEnvironment) {
        case (nil, nil):
            return nil
        case (_?, _?):
            throw ValidationError("give --credential-key-file or --credential-key-env, not both")
        case (let path?, nil):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--credential-key-file \(path) cannot be read")
            }
            do { return try CredentialVault(key: Array(data)) } catch {
                throw ValidationError("--credential-key-file \(path): \(error)")
            }
        case (nil, let name?):
            guard let text = ProcessInfo.processInfo.environment[name] else {
                throw ValidationError("the environment variable \(name) (--credential-key-env) is not set")
            }
            do { return try CredentialVault(key: Array(text.utf8)) } catch {
                throw ValidationError("--credential-key-env \(name): \(error)")
            }
        }
    }

    /// ``vault()``, which a command that seals needs.
    func requiredVault() throws -> CredentialVault {
        guard let vault = try vault() else {
            throw ValidationError(
                "credentials are kept sealed: give the key-encryption key with --credential-key-file or --credential-key-env"
            )
        }
        return vault
    }

    /// Runs `body` with the store, its schema prepared; a PostgreSQL pool runs until `body` returns.
    /// A PostgreSQL server that does not answer within `--database-wait-seconds` is an error; SIGTERM
    /// or SIGINT while waiting stops the command cleanly (``StoppedWhileStarting``).
    func withStore<T: Sendable>(
        logger: Logger, _ body: @Sendable (any GatewayStore) async throws -> T
    ) async throws -> T {
        guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
            if databasePasswordFile != nil {
                throw ValidationError(
                    "--database-password-file is for a PostgreSQL --database (postgres://user@host/database); a SQLite queue has no password"
                )
            }
            do {
                let store = try SQLiteStore(path: database)
                try await store.prepare()
                return try await body(store)
            } catch {
                throw DatabaseFailure.readable(error)
            }
        }
        guard (1...3600).contains(databaseWaitSeconds) else {
            throw ValidationError("--database-wait-seconds \(databaseWaitSeconds) must be between 1 and 3600")
        }
        guard (1...1000).contains(databaseConnections) else {
            throw ValidationError("--database-connections \(databaseConnections) must be between 1 and 1000")
        }
        let store: PostgresStore
        let url = try postgresURL()
        do {
            store = try PostgresStore(url: url, maximumConnections: databaseConnections, logger: logger)
        } catch {
            // The URL cannot be used: a setting, exit 64.
            throw ValidationError("--database: \(error)")
        }
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        // The pool's last log lines (its failed connection attempts, or one it was opening when it
        // was stopped) would land in the middle of an error's message on standard error: before
        // an error is thrown, the pool is stopped, with a short bound on the wait so that a pool
        // that does not end cannot hold the command's exit.
        func failed(_ error: any Error) async -> any Error {
            pool.cancel()
            await Self.waitForEnd(of: pool, atMost: .seconds(2))
            return DatabaseFailure.readable(error)
        }
        do {
            try await Self.first(
                within: .seconds(databaseWaitSeconds), logger: logger,
                timedOut:
                    "PostgreSQL did not answer within \(databaseWaitSeconds) s: check that the server in --database runs, is reachable from here and accepts this user (--database-wait-seconds waits longer)"
            ) { try await store.prepare() }
        } catch {
            throw await failed(error)
        }
        do {
            return try await body(store)
        } catch {
            throw await failed(error)
        }
    }

    /// The PostgreSQL `--database`, with the password `--database-password-file` holds when one is
    /// given (then the URL must have none).
    func postgresURL() throws -> String {
        guard let path = databasePasswordFile else { return database }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--database-password-file \(path) cannot be read")
        }
        var password = String(decoding: data, as: UTF8.self)
        // One line ending ("\n", or "\r\n", which is one Character), as `echo` and editors leave it.
        if password.last?.isNewline == true { password.removeLast() }
        guard !password.isEmpty else { throw ValidationError("--database-password-file \(path) is empty") }
        do { return try PostgresStore.url(database, password: password) } catch {
            throw ValidationError("--database with --database-password-file: \(error)")
        }
    }

    /// Returns when `task` has ended or `limit` has passed, whichever comes first.
    static func waitForEnd(of task: Task<Void, Never>, atMost limit: Duration) async {
        let (ended, continuation) = AsyncStream.makeStream(of: Void.self)
        let waiter = Task {
            await task.value
            continuation.yield()
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            continuation.yield()
        }
        for await _ in ended { break }
        timer.cancel()
        waiter.cancel()
    }

    /// Runs `work` until it ends, `wait` passes (an error saying `timedOut`) or SIGTERM/SIGINT
    /// arrives (``StoppedWhileStarting``), whichever comes first. `work` is left running, cancelled,
    /// when it does not end first: a connection attempt that ignores cancellation cannot hold the
    /// command.
    static func first(
        within wait: Duration, logger: Logger, timedOut: String, _ work: @escaping @Sendable () async throws -> Void
    ) async throws {
        let (results, continuation) = AsyncStream.makeStream(of: Result<Void, any Error>.self)
        // Trapped before anything else happens, so a signal from now on is a clean stop.
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        logger.info("connecting to PostgreSQL", metadata: ["wait_seconds": "\(wait.components.seconds)"])
        let tasks = [
            Task {
                do {
                    try await work()
                    continuation.yield(.success(()))
                } catch {
                    continuation.yield(.failure(error))
                }
            },
            Task {
                try? await Task.sleep(for: wait)
                continuation.yield(.failure(StoreError(timedOut)))
            },
            Task {
                for await _ in signals {
                    continuation.yield(.failure(StoppedWhileStarting()))
                    return
                }
            },
        ]
        defer { for task in tasks { task.cancel() } }
        for await result in results { return try result.get() }
    }
}

/// SIGTERM or SIGINT arrived while the gateway was starting: it stops, exit status 0.
struct StoppedWhileStarting: Error {}

struct AddKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-key",
        abstract: "Create an API key for some apps; prints the key once (only its hash is stored).")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "A name for the key (shown in logs and metrics).") var name: String
    @Option(help: "A bundle id (or MDM topic) the key may send to; repeat for more.") var app: [String]
    @Option(help: "Requests per second the key may make.") var rate: Double = 50

    func run() async throws {
        guard !app.isEmpty else { throw ValidationError("give at least one --app") }
        guard rate > 0, rate.isFinite else { throw ValidationError("--rate \(rate) must be a positive number") }
        let key = GatewayAPI.makeAPIKey()
        let record = APIKey(name: name, hash: GatewayAPI.hash(apiKey: key), apps: Set(app), requestsPerSecond: rate)
        try await database.withStore(logger: Logger(label: "apns-gateway")) { store in try await store.addAPIKey(record)
        }
        print(key)
    }
}

struct ListKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-keys",
        abstract: "Print each API key's name, rate and apps (never the key; the store has only its hash).")
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let keys = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.apiKeys()
        }
        for key in keys {
            print("\(key.name)\t\(key.requestsPerSecond)/s\t\(key.apps.sorted().joined(separator: ","))")
        }
    }
}

struct RevokeKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke-key", abstract: "Remove an API key; running gateways refuse it within 5 seconds.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The key's name.") var name: String

    func run() async throws {
        let name = self.name
        let removed = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.revokeAPIKey(name: name)
        }
        guard removed else { throw ValidationError("no API key is called \(name); apns-gateway list-keys shows them") }
        print("revoked \(name)")
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the API and send what is queued (the default).")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free one and prints it).") var port = 8080
    @Option(name: .customLong("key-file"), help: "The .p8 signing key (token authentication).") var keyFile: String?
    @Option(name: .customLong("key-id"), help: "The 10-character key id.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "The 10-character team id.") var teamID: String?
    @Option(name: .customLong("p12"), help: "PKCS#12 bundle (certificate authentication).") var pkcs12: String?
    @Option(name: .customLong("password-env"), help: "Environment variable holding the --p12 password.")
    var passwordEnvironment: String?
    @Flag(help: "Send to APNs' production environment (default: sandbox).") var production = false
    @Option(name: .customLong("apns-host"), help: "HOST:PORT of another APNs server, e.g. `apns mock-server`.")
    var apnsHost: String?
    @Option(name: .customLong("ca-file"), help: "Trust only this CA (PEM) for the APNs server's certificate.")
    var caFile: String?
    @Option(
        help: ArgumentHelp(
            "Reach APNs through this proxy: http://HOST:PORT, https://HOST:PORT or socks5://HOST:PORT (USER@ before the host if it needs credentials), `direct` or `environment` (the default: https_proxy and no_proxy, as curl reads them)."
        ))
    var proxy = "environment"
    @Option(
        name: .customLong("proxy-password-env"),
        help: "Environment variable holding the proxy's password (the user is the one in --proxy).")
    var proxyPasswordEnvironment: String?
    @Option(
        name: .customLong("max-devices"),
        help: "Devices in one request; the body limit (1 MiB) grows with it, 70 bytes a device past 14,000.")
    var maximumDevices = 5_000
    @Option(name: .customLong("max-queue-depth"), help: "Unfinished device-sends above which POST answers 503.")
    var maximumQueueDepth = 1_000_000
    @Option(
        help:
            "This instance's name in claims: unique among running instances (a second live one is refused). Default: gateway-HOST-PID."
    )
    var instance: String?
    @Option(
        name: .customLong("lease-seconds"),
        help:
            "How long a dead instance's claims wait before another instance takes them over (renewed every second while the instance lives). At least the send timeout plus 2."
    )
    var leaseSeconds = 120
    @Option(name: .customLong("timeout"), help: "Each device-send's deadline, in seconds (at most 86400).")
    var timeoutSeconds = 30.0
    @Option(
        name: .customLong("max-age-seconds"),
        help:
            "How long a notification without an expiration of its own is sent for after it was accepted (through APNs outages: sending pauses, nothing is failed); then what is left of it is finished as expired, never sent (1–2592000)."
    )
    var maximumAgeSeconds = 86_400.0
    @Option(
        name: .customLong("retention-days"),
        help: "How long finished notifications, their outcomes and unregistered tokens are kept (at most 3650).")
    var retentionDays = 7.0
    @Option(
        name: .customLong("at-most-once-group"),
        help:
            "An at-most-once notification's device-sends are recorded as started this many at a time before any of them is written to APNs (1–2000): after a crash at most this many times --at-most-once-groups are reported unknown without having been sent."
    )
    var atMostOnceGroup = 100
    @Option(
        name: .customLong("at-most-once-groups"),
        help: "Groups of an at-most-once notification on the wire at once, the next recorded meanwhile (1–64).")
    var atMostOnceGroups = 4
    @Option(
        name: .customLong("memory-trim-seconds"),
        help:
            "Hand the process's freed heap memory back to the system this often (glibc's malloc_trim; Linux), so the resident size stays near what is in use; 0 turns it off (1–86400)."
    )
    var memoryTrimSeconds = 10.0
    @Option(
        name: .customLong("additional-connections-when-slow"),
        help:
            "Connections each credential's connector may add to APNs while every stream is busy and each takes well over a round trip per request (APNs far away or answering late); retired when the load fits fewer; 0 keeps one connection (0–1000)."
    )
    var additionalConnectionsWhenSlow = 1
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning (or warn), error, critical.")
    var logLevel = "info"
    @Option(
        name: .customLong("log-format"),
        help: "text (one line for a person) or json (one JSON object a line, for a log pipeline).")
    var logFormat = "text"
    @Flag(
        name: .customLong("access-log"),
        help:
            "Log one line per request at info (label apns-gateway.access): method, path, status, duration, caller, API key name; never a key, a query or a body."
    )
    var accessLog = false
    @Option(
        name: .customLong("otlp-endpoint"),
        help:
            "Export traces over OTLP/HTTP to this collector (http://host:4318/v1/traces, or https://…): a span per request, a child span per send of each notification, the library's spans under it; an incoming traceparent is honoured."
    )
    var otlpEndpoint: String?
    @Option(
        name: .customLong("otlp-protocol"),
        help: "http/protobuf (the default) or http/json.")
    var otlpProtocol = "http/protobuf"

    /// `--log-level` as swift-log's level; "warn" is taken for "warning", as most tools spell it.
    func loggingLevel() throws -> Logger.Level {
        let name = logLevel.lowercased() == "warn" ? "warning" : logLevel.lowercased()
        guard let level = Logger.Level(rawValue: name) else {
            throw ValidationError(
                "--log-level \(logLevel) is not a level: give trace, debug, info, notice, warning (or warn), error or critical"
            )
        }
        return level
    }

    /// The dispatcher's settings from the options, checked before anything starts.
    func sendingConfiguration() throws -> Dispatcher.Configuration {
        var sending = Dispatcher.Configuration()
        if let instance { sending.instance = instance }
        guard leaseSeconds > 0, leaseSeconds <= 86_400 else {
            throw ValidationError("--lease-seconds \(leaseSeconds) must be between 1 and 86400")
        }
        guard timeoutSeconds.isFinite, timeoutSeconds > 0, timeoutSeconds <= 86_400 else {
            throw ValidationError("--timeout \(timeoutSeconds) must be more than 0 and at most 86400 seconds")
        }
        guard maximumAgeSeconds.isFinite, maximumAgeSeconds >= 1, maximumAgeSeconds <= 2_592_000 else {
            throw ValidationError("--max-age-seconds \(maximumAgeSeconds) must be between 1 and 2592000 (30 days)")
        }
        guard retentionDays.isFinite, retentionDays > 0, retentionDays <= 3650 else {
            throw ValidationError("--retention-days \(retentionDays) must be more than 0 and at most 3650")
        }
        guard (1...Dispatcher.Configuration().claimBatch).contains(atMostOnceGroup) else {
            throw ValidationError(
                "--at-most-once-group \(atMostOnceGroup) must be between 1 and \(Dispatcher.Configuration().claimBatch) (a claim's size): smaller groups leave fewer device-sends in doubt after a crash, larger ones write to the database less often"
            )
        }
        guard (1...64).contains(atMostOnceGroups) else {
            throw ValidationError(
                "--at-most-once-groups \(atMostOnceGroups) must be between 1 and 64: more groups on the wire keep at-most-once sends faster, and leave more in doubt after a crash"
            )
        }
        sending.startGroup = atMostOnceGroup
        sending.startGroupsInFlight = atMostOnceGroups
        sending.retention = .seconds(Int64((retentionDays * 86_400).rounded()))
        sending.maximumAge = .milliseconds(Int64((maximumAgeSeconds * 1000).rounded()))
        sending.lease = .seconds(leaseSeconds)
        sending.timeout = .milliseconds(Int64((timeoutSeconds * 1000).rounded()))
        do throws(DispatcherConfigurationError) {
            try sending.check()
        } catch {
            throw ValidationError(
                error.description.replacingOccurrences(of: "Give a lease of", with: "Give --lease-seconds")
                    .replacingOccurrences(of: "a shorter send timeout", with: "a shorter --timeout"))
        }
        return sending
    }

    func run() async throws {
        do {
            try await serve()
        } catch is StoppedWhileStarting {
            throw ExitCode.success
        }
    }

    func serve() async throws {
        let level = try loggingLevel()
        let sending = try sendingConfiguration()
        let format = logFormat.lowercased()
        guard format == "text" || format == "json" else {
            throw ValidationError("--log-format \(logFormat) is not a format: give text or json")
        }
        LoggingSystem.bootstrap { label in
            if format == "json" {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "apns-gateway")
        let tracing = try tracingService()

        let transport = try transportConfiguration()
        let fallback = try makeConnector(transport: transport, logger: Logger(label: "apns"))
        let vault = try database.vault()
        guard fallback != nil || vault != nil else {
            throw ValidationError(
                "give APNs credentials: --key-file/--key-id/--team-id or --p12/--password-env for every app, or the key-encryption key (--credential-key-file or --credential-key-env) of the credentials added with `apns-gateway credential add`"
            )
        }
        try await database.withStore(logger: logger) { store in
            // A key-encryption key that is not the one the stored credentials were sealed with
            // stops the start, before any of their notifications could fail for it.
            let stored = try await store.credentials()
            if let vault {
                for credential in stored { _ = try vault.open(credential) }
            } else if !stored.isEmpty {
                throw ValidationError(
                    "the queue holds \(stored.count) credential(s) (\(stored.map(\.name).joined(separator: ", "))), sealed: give their key-encryption key with --credential-key-file or --credential-key-env"
                )
            }
            let connectors = CredentialConnectors(
                store: store, vault: vault, fallback: fallback?.fallback, transport: transport,
                logger: Logger(label: "apns"), gracePeriod: sending.timeout)
            try await connectors.refresh()
            try await serve(
                store: store, connectors: connectors, connectorService: fallback?.service, tracing: tracing,
                sending: sending, vault: vault, registry: registry, logger: logger)
        }
    }

    private func serve(
        store: any GatewayStore, connectors: CredentialConnectors, connectorService: (any Service)?,
        tracing: (any Service)?, sending: Dispatcher.Configuration, vault: CredentialVault?,
        registry: PrometheusCollectorRegistry, logger: Logger
    ) async throws {
        let dispatcher = Dispatcher(store: store, connectors: connectors, configuration: sending, logger: logger)
        // Webhook secrets are sealed like credentials: without the key-encryption key, no endpoint
        // can have been added.
        var webhooks: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let vault {
            var configuration = WebhookSender.Configuration()
            configuration.instance = sending.instance
            configuration.incarnation = dispatcher.identity.incarnation
            configuration.clock = sending.clock
            webhooks.append(
                .init(service: WebhookSender(store: store, vault: vault, configuration: configuration, logger: logger)))
        }
        var limits = GatewayAPI.Configuration()
        limits.maximumDevicesPerRequest = maximumDevices
        limits.maximumBodyBytes = GatewayAPI.Configuration.bodyBytes(forDevices: maximumDevices)
        limits.maximumQueueDepth = maximumQueueDepth
        if accessLog { limits.accessLogger = Logger(label: "apns-gateway.access") }
        let api = GatewayAPI(
            store: store, configuration: limits, credentials: { connectors.policy(for: $0) },
            metricsText: {
                var buffer: [UInt8] = []
                registry.emit(into: &buffer)
                return String(decoding: buffer, as: UTF8.self)
            },
            sendingStatus: { dispatcher.status },
            onAccepted: { dispatcher.wake() })
        let app = Application(
            router: api.router(), configuration: .init(address: .hostname(host, port: port)),
            onServerRunning: { channel in
                // One line on standard output for scripts that start the gateway on port 0.
                print("listening \(channel.localAddress?.ipAddress ?? "?"):\(channel.localAddress?.port ?? 0)")
                fflush(nil)
            },
            logger: logger)
        // Shut down in reverse order: stop taking requests, finish claimed sends, close APNs
        // connections, export the last spans.
        let group = ServiceGroup(
            configuration: .init(
                services: (tracing.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? [])
                    + (connectorService.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? [])
                    + [.init(service: connectors)] + webhooks + [.init(service: dispatcher), .init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// With `--otlp-endpoint`, swift-otel's tracer bootstrapped (traces only: logs and metrics keep
    /// their own backends) and the service that exports its spans; nil without it.
    private func tracingService() throws -> (any Service)? {
        guard let otlpEndpoint else { return nil }
        guard let url = URL(string: otlpEndpoint), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError(
                "--otlp-endpoint \(otlpEndpoint) is not an http:// or https:// URL: give the collector's traces URL, e.g. http://127.0.0.1:4318/v1/traces"
            )
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "apns-gateway"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.otlpExporter.endpoint = otlpEndpoint
        switch otlpProtocol {
        case "http/protobuf": configuration.traces.otlpExporter.protocol = .httpProtobuf
        case "http/json": configuration.traces.otlpExporter.protocol = .httpJSON
        default: throw ValidationError("--otlp-protocol \(otlpProtocol) is not one: give http/protobuf or http/json")
        }
        // Spans reach the collector within a second of their end.
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
    }

    /// Every connector's transport: trust, proxy, memory trim, connections added while slow.
    private func transportConfiguration() throws -> TransportConfiguration {
        var transport = TransportConfiguration()
        if let caFile { transport.trustedCertificateAuthority = .file(path: caFile) }
        guard memoryTrimSeconds == 0 || (memoryTrimSeconds >= 1 && memoryTrimSeconds <= 86_400) else {
            throw ValidationError("--memory-trim-seconds \(memoryTrimSeconds) must be 0 (off) or between 1 and 86400")
        }
        if memoryTrimSeconds > 0 { transport.memoryTrimInterval = .seconds(memoryTrimSeconds) }
        guard (0...TransportConfiguration.maximumConnectionsLimit).contains(additionalConnectionsWhenSlow) else {
            throw ValidationError(
                "--additional-connections-when-slow \(additionalConnectionsWhenSlow) must be between 0 (one connection always) and \(TransportConfiguration.maximumConnectionsLimit)"
            )
        }
        transport.additionalConnectionsWhenSlow = additionalConnectionsWhenSlow
        transport.proxy = try Proxy(setting: proxy)
        if let proxyPasswordEnvironment {
            guard let username = transport.proxy.username else {
                throw ValidationError("--proxy-password-env needs a proxy URL with a user, as in http://USER@HOST:PORT")
            }
            guard let password = ProcessInfo.processInfo.environment[proxyPasswordEnvironment] else {
                throw ValidationError("the environment variable \(proxyPasswordEnvironment) is not set")
            }
            transport.proxy = transport.proxy.with(credentials: .init(username: username, password: password))
        }
        return transport
    }

    /// The connector of the credential flags, for every app no stored credential serves; nil
    /// without those flags.
    private func makeConnector(
        transport: TransportConfiguration, logger: Logger
    ) throws -> (fallback: CredentialConnectors.Fallback, service: any Service)? {
        var environment: APNsEnvironment = production ? .production : .sandbox
        if let apnsHost {
            guard let colon = apnsHost.lastIndex(of: ":"), let port = Int(apnsHost[apnsHost.index(after: colon)...]),
                (1...65535).contains(port)
            else {
                throw ValidationError("--apns-host \(apnsHost) is not HOST:PORT")
            }
            environment = .custom(host: String(apnsHost[..<colon]), port: port)
        }
        if let keyFile {
            guard let keyID, let teamID else { throw ValidationError("--key-file needs --key-id and --team-id") }
            let connector = try TokenConnector(
                teamID: teamID, keyID: keyID, key: .file(path: keyFile), environment: environment, transport: transport,
                logger: logger)
            return (
                .init(connector: AnyConnector(connector), environment: production ? .production : .sandbox), connector
            )
        }
        if let pkcs12 {
            guard let passwordEnvironment, let password = ProcessInfo.processInfo.environment[passwordEnvironment]
            else {
                throw ValidationError("--p12 needs --password-env naming a set environment variable")
            }
            let connector = try CertificateConnector(
                pkcs12: .file(path: pkcs12), password: password, environment: environment, transport: transport,
                logger: logger)
            return (
                .init(connector: AnyConnector(connector), environment: production ? .production : .sandbox), connector
            )
        }
        return nil
    }
}
