@_spi(Benchmarks) import APNs
import APNsMockServer
import ArgumentParser
import Foundation
import Logging

/// Measures swift-apns against the project's mock server running in a separate process, against
/// h2load (when installed) on the same server, and its serialiser against JSONEncoder, then prints
/// one table. Ratios are taken within one run, because machines here are noisy.
///
///     swift run -c release APNsBenchmark
@main
struct Benchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "APNsBenchmark", abstract: "swift-apns throughput, CPU, memory and serialisation.")

    @Option(help: "Alert notifications for the throughput run.") var count = 100_000
    @Option(help: "Streams in flight on the one connection.") var streams = 100
    @Option(help: "Alternating rounds the throughput runs are split into.") var rounds = 4
    @Option(name: .customLong("memory-count"), help: "Sends for the memory run (RSS is read after 100k and at the end).") var memoryCount = 1_000_000
    @Option(name: .customLong("server-threads"), help: "Event-loop threads of the mock server.") var serverThreads = 2
    @Option(name: .customLong("serialization-iterations")) var serializationIterations = 200_000
    @Flag(name: .customLong("skip-h2load")) var skipH2load = false
    @Flag(name: .customLong("serve"), help: .hidden) var serve = false
    @Option(name: .customLong("key-file"), help: .hidden) var keyFile: String?
    @Option(
        name: .customLong("only"),
        help: "Run only one connector ('observed' or 'unobserved') for --count pushes and exit: for counting instructions under valgrind --tool=callgrind, where the difference of the two totals is the cost of observability."
    ) var only: String?

    func run() async throws {
        if serve { return try await MockServerProcess.serve(keyFile: keyFile, threads: serverThreads) }

        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try MockServerProcess.launch(key: key, threads: serverThreads)
        defer { server.stop() }
        var rows: [(String, String)] = []
        print("mock server: separate process, \(serverThreads) event-loop threads, no recording, port \(server.port)")

        // 1–3. swift-apns, libcurl alone and h2load on the same server, in alternating rounds so
        // that noise from the rest of the machine hits all three alike.
        var transport = TransportConfiguration()
        transport.trustedCertificateAuthority = .file(path: server.caPath)
        transport.maximumConcurrentStreams = streams
        transport.requestTimeout = .seconds(120)
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: server.port), transport: transport)
        // The same connector with no observability at all (no log call, metric or span, not even a no-op one), for the
        // cost of logging + metrics + tracing with no-op backends: what every user pays.
        let unobserved = try TokenConnector.unobserved(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: server.port), transport: transport)
        // The same again with a logger that listens at `notice` (and drops every line): this turns
        // on the GOAWAY watch, libcurl's verbose channel (TransportConfiguration.reportsGoAway).
        var listening = Logger(label: "benchmark", factory: { _ in DroppingLogHandler() })
        listening.logLevel = .notice
        let watching = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: server.port), transport: transport, logger: listening)
        let notification = Workload.notification()
        let request = try notification.request(to: Workload.device(0))
        let token = try connector.bearerToken()
        let h2load = skipH2load ? nil : H2Load.find()
        if let only {
            guard ["observed", "unobserved", "watching"].contains(only) else {
                throw ValidationError("--only takes observed, unobserved or watching")
            }
            let chosen = only == "observed" ? connector : only == "watching" ? watching : unobserved
            try await Workload.warmUp(notification, via: chosen, inFlight: streams)
            let result = try await Workload.run(notification, via: chosen, devices: count, inFlight: streams)
            print("\(only): \(result.outcomes) outcomes")
            return
        }
        try await Workload.warmUp(notification, via: connector, inFlight: streams)
        try await Workload.warmUp(notification, via: unobserved, inFlight: streams)
        try await Workload.warmUp(notification, via: watching, inFlight: streams)
        var ours = Workload.Result()
        var bare = Workload.Result()
        var watched = Workload.Result()
        var floor = Workload.Result()
        var reference = Workload.Result()
        let rounds = max(1, min(self.rounds, count / 100))
        var oursPeakRSS = 0
        for round in 0..<rounds {
            let share = count / rounds + (round < count % rounds ? 1 : 0)
            ours.add(try await Workload.run(notification, via: connector, devices: share, inFlight: streams))
            if round == 0 { oursPeakRSS = Usage.peakRSS() }  // before the references add their own
            bare.add(try await Workload.run(notification, via: unobserved, devices: share, inFlight: streams))
            watched.add(try await Workload.run(notification, via: watching, devices: share, inFlight: streams))
            floor.add(try LibcurlReference.run(port: server.port, caPath: server.caPath, count: share, streams: streams, token: token, request: request))
            if let h2load { reference.add(try H2Load.run(h2load, port: server.port, count: share, streams: streams, token: token, request: request)) }
        }
        rows.append(("swift-apns pushes/s (\(count), 1 connection, \(streams) streams)", Format.rate(ours.rate)))
        rows.append(("swift-apns client CPU s per 100k (user+sys)", Format.seconds(ours.cpuPer100k)))
        rows.append(("swift-apns peak RSS (first round, before the references ran)", Format.megabytes(oursPeakRSS)))
        rows.append(("swift-apns connections opened (CURLINFO_NUM_CONNECTS)", "\(connector.connectionsOpened)"))
        rows.append(("swift-apns outcomes / devices", "\(ours.outcomes) / \(count)"))
        rows.append(("swift-apns without observability, CPU s per 100k", Format.seconds(bare.cpuPer100k)))
        rows.append((
            "observability overhead (log+metrics+tracing, no-op backends), CPU per push (target <= 3 %)",
            String(format: "%+.1f %%", (ours.cpuPer100k / bare.cpuPer100k - 1) * 100)))
        rows.append((
            "the same with a listening logger (GOAWAY watch: libcurl verbose), CPU per push",
            String(format: "%+.1f %%", (watched.cpuPer100k / bare.cpuPer100k - 1) * 100)))
        rows.append(("libcurl alone (C multi loop, same requests) pushes/s", Format.rate(floor.rate)))
        rows.append(("libcurl alone CPU s per 100k (user+sys)", Format.seconds(floor.cpuPer100k)))
        rows.append(("ratio swift-apns / libcurl alone, CPU per push", Format.ratio(ours.cpuPer100k / floor.cpuPer100k)))
        if h2load != nil {
            rows.append(("h2load pushes/s (same server, 1 connection, \(streams) streams)", Format.rate(reference.rate)))
            rows.append(("h2load CPU s per 100k (user+sys)", Format.seconds(reference.cpuPer100k)))
            rows.append(("ratio swift-apns / h2load, pushes/s (target >= 0.6)", Format.ratio(ours.rate / reference.rate)))
            rows.append(("ratio swift-apns / h2load, CPU per push (target <= 2)", Format.ratio(ours.cpuPer100k / reference.cpuPer100k)))
            rows.append(("ratio libcurl alone / h2load, CPU per push (floor of the above)", Format.ratio(floor.cpuPer100k / reference.cpuPer100k)))
        } else {
            rows.append(("h2load", skipH2load ? "skipped" : "not installed (apt-get install nghttp2-client)"))
        }

        // 4. Serialisation.
        let serialization = Serialization.measure(iterations: serializationIterations)
        rows.append(("serialise alert + app data, swift-apns ns/op (median of 20 rounds)", String(format: "%.0f", serialization.ours)))
        rows.append(("serialise alert + app data, JSONEncoder(.sortedKeys) ns/op", String(format: "%.0f", serialization.jsonEncoder)))
        rows.append(("ratio JSONEncoder / swift-apns (target >= 5)", Format.ratio(serialization.ratio)))

        // 5. Memory: peak RSS after 100k and after memoryCount sends, in one bulk send.
        let reset = Usage.resetPeakRSS()  // the memory run's own peak, not the references'
        if !reset { print("note: could not reset peak RSS; the memory rows include the earlier runs") }
        let memory = try await Workload.memory(notification, via: connector, devices: memoryCount, checkpoint: min(100_000, memoryCount), inFlight: streams)
        rows.append(("peak RSS after \(min(100_000, memoryCount)) sends", Format.megabytes(memory.atCheckpoint)))
        rows.append(("peak RSS after \(memoryCount) sends (target: within 5 MB)", Format.megabytes(memory.atEnd)))
        rows.append(("memory run outcomes / devices", "\(memory.outcomes) / \(memoryCount)"))

        print(Format.table(rows))
        let lost = ours.outcomes != count || memory.outcomes != memoryCount
        if lost { throw ExitCode(1) }
    }
}

/// A handler that drops every line: a logger that "listens" without the cost of writing.
struct DroppingLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .notice
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {}
}
