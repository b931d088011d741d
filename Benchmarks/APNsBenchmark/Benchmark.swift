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
struct Benchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "APNsBenchmark", abstract: "swift-apns throughput, CPU, memory and serialisation.")

    @Option(help: "Alert notifications for the throughput run.") var count = 100_000
    @Option(help: "Streams in flight on the one connection.") var streams = 100
    @Option(help: "Alternating rounds the throughput runs are split into.") var rounds = 4
    @Option(
        name: .customLong("memory-count"), help: "Sends for the memory run (RSS is read after 100k and at the end).")
    var memoryCount = 1_000_000
    @Option(name: .customLong("server-threads"), help: "Event-loop threads of the mock server.") var serverThreads = 2
    @Option(name: .customLong("serialization-iterations")) var serializationIterations = 200_000
    @Option(
        name: .customLong("latency-count"),
        help: "Sequential single sends (one at a time) for the latency rows, and as many through the C loop.")
    var latencyCount = 2_000
    @Option(name: .customLong("pool-count"), help: "Pushes per pool size for the pool curve (0 skips it).")
    var poolCount = 50_000
    @Option(name: .customLong("pool-sizes"), help: "Connections per pool, comma-separated.") var poolSizes = "1,2,4"
    @Option(
        name: .customLong("pool-server-threads"),
        help: "Event-loop threads of the mock server the pool curve runs against.")
    var poolServerThreads = 4
    @Flag(name: .customLong("skip-h2load")) var skipH2load = false
    @Flag(name: .customLong("serve"), help: .hidden) var serve = false
    @Option(name: .customLong("serve-delay"), help: .hidden) var serveDelay = 0
    @Flag(name: .customLong("serve-nio"), help: .hidden) var serveNIO = false
    @Flag(name: .customLong("serve-late"), help: .hidden) var serveLate = false
    @Option(
        name: .customLong("far-in-flight"),
        help:
            "The far-from-APNs table's bulk sends pass this maximumInFlight (by default they pass none, as a user's call does: the connector's streams and a reserve)."
    )
    var farInFlight: Int?
    @Flag(
        name: .customLong("far-server-statistics"),
        help:
            "With --far-server nio: the server prints, each second, the requests it holds, how late its answers leave and how long a stream it answered stays empty before the next request arrives."
    )
    var farServerStatistics = false
    @Option(
        name: .customLong("rtts"),
        help: "Round-trip times in ms for the far-from-APNs table, comma-separated (empty skips it).")
    var rtts = "20,50,100"
    @Option(name: .customLong("far-connections"), help: "Connections per connector for the far-from-APNs table.")
    var farConnections = "1,2,4"
    @Option(
        name: .customLong("far-additional"),
        help:
            "additionalConnectionsWhenSlow for the far-from-APNs table's delayed connectors (0: each pool keeps its size; 1: the default)."
    )
    var farAdditional = 0
    @Option(name: .customLong("far-streams"), help: "Streams per connection for the far-from-APNs table.")
    var farStreams = "100,500,1000"
    @Option(name: .customLong("far-count"), help: "Pushes per point of the far-from-APNs table, at most.")
    var farCount = 30_000
    @Option(
        name: .customLong("far-rounds"),
        help: "Rounds each point of the far-from-APNs table is split into, each against its own zero-delay run.")
    var farRounds = 3
    @Option(
        name: .customLong("far-server"),
        help:
            "The delayed server of the far-from-APNs table: mock (the mock APNs, the default), nginx (nginx with its echo module, which answers a burst of 1,000 on time where the mock cannot), nio (SwiftNIO's HTTP/2 server as it comes, answering on a schedule and checking nothing) or nio-late (the same on two threads, each answer with an apns-id read from /dev/urandom where it is written: answers leave a little late and in clumps)."
    )
    var farServer = "mock"
    @Option(
        name: .customLong("user-delay"),
        help: "With --only user: the mock answers each request this many ms after it arrived (0: at once).")
    var userDelay = 0
    @Option(name: .customLong("key-file"), help: .hidden) var keyFile: String?
    @Option(name: .customLong("write-key"), help: .hidden) var writeKey: String?
    @Option(
        name: .customLong("external-server"),
        help:
            "Use the mock server already listening on this port (started with --serve --key-file, as Benchmarks/callgrind.sh does) instead of starting one."
    )
    var externalServer: Int?
    @Option(
        name: .customLong("only"),
        help:
            "Run one contender for --count pushes, print its rate and CPU s per 100k, and exit, for counting instructions under valgrind --tool=callgrind or comparing contenders each in a process of its own: 'observed', 'unobserved', 'watching' (bulk sends through those connectors), 'executor' (the observed bulk send from a task preferring the connector's task executor), 'singles' (a task group of single sends), 'libcurl' (the C multi loop) or 'coalesced' (the C loop corking its connection as swift-apns does); also 'far' (the far-from-APNs table alone), 'user' (bulk against single sends in a user's code, over --rounds alternating rounds) and 'actors' (the bulk send and its AsyncSequence read from the main actor and from nonisolated code, over --rounds rounds). Differences of totals between two counts give instructions per push."
    ) var only: String?

    func run() async throws {
        if serveNIO {
            return try await NIODelayServer.serve(
                delayMilliseconds: serveDelay,
                streams: farStreams.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                    .max() ?? 1_000, statistics: farServerStatistics, late: serveLate)
        }
        if serve {
            return try await MockServerProcess.serve(
                keyFile: keyFile, threads: serverThreads, delayMilliseconds: serveDelay)
        }
        if let writeKey {
            return try MockServerProcess.writeKey(
                MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001"), to: writeKey)
        }

        let key: MockCertificateAuthority.SigningKey
        let server: MockServerProcess
        if let externalServer {
            key = try MockServerProcess.readKey(keyFile)
            server = MockServerProcess.attach(port: externalServer, keyFile: keyFile ?? "")
        } else {
            key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
            server = try MockServerProcess.launch(key: key, threads: serverThreads)
        }
        defer { server.stop() }
        var rows: [(String, String)] = []
        print("mock server: separate process, \(serverThreads) event-loop threads, no recording, port \(server.port)")

        // 0. Memory of an idle connector, measured before anything else has grown the heap.
        if only == nil {
            let idle = try await IdleMemory.measure(key: key, server: server)
            rows.append(
                (
                    "RSS of an idle connector with one open connection (a second connector in the process)",
                    Format.megabytes(idle.second)
                ))
            rows.append(
                (
                    "the same for the process's first connector (with libcurl's and OpenSSL's own set-up)",
                    Format.megabytes(idle.first)
                ))
        }

        // 1–3. swift-apns, libcurl alone and h2load on the same server, in alternating rounds so
        // that noise from the rest of the machine hits all three alike.
        let transport = server.transport(streams: streams)
        let connector = try server.connector(key: key, streams: streams)
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
            guard
                [
                    "observed", "unobserved", "watching", "singles", "libcurl", "coalesced", "executor", "far", "user",
                    "actors",
                ]
                .contains(only)
            else {
                throw ValidationError(
                    "--only takes observed, unobserved, watching, executor, singles, libcurl, coalesced, far, user or actors"
                )
            }
            if only == "user" {
                // The bulk send against single sends in a user's code (Data tokens), alone; with
                // --user-delay, against a mock that answers that many ms after each request arrived.
                let far =
                    userDelay > 0
                    ? try MockServerProcess.launch(key: key, threads: serverThreads, delayMilliseconds: userDelay) : nil
                defer { far?.stop() }
                let via = try far?.connector(key: key, streams: streams) ?? connector
                print(
                    Format.table(
                        try await UserStyle.compare(
                            notification, via: via, count: count, rounds: rounds, inFlight: streams)))
                return
            }
            if only == "actors" {
                // The same bulk send read from the main actor and from nonisolated code.
                print(
                    Format.table(
                        try await Isolation.compare(notification, via: connector, count: count, rounds: rounds)))
                return
            }
            if only == "far" {
                // The far-from-APNs table alone.
                print(Format.table(try await far(notification, key: key, request: request, token: token)))
                return
            }
            let result: Workload.Result
            switch only {
            case "libcurl", "coalesced":
                result = try LibcurlReference.run(
                    port: server.port, caPath: server.caPath, count: count, streams: streams, token: token,
                    request: request,
                    coalesce: only == "coalesced")
            case "singles":
                try await Workload.warmUp(notification, via: connector, inFlight: streams)
                result = try await Workload.runSingles(notification, via: connector, devices: count, inFlight: streams)
            case "executor":
                try await Workload.warmUp(notification, via: connector, inFlight: streams)
                result = try await withTaskExecutorPreference(connector.taskExecutor) {
                    try await Workload.run(notification, via: connector, devices: count, inFlight: streams)
                }
            default:
                let chosen = only == "observed" ? connector : only == "watching" ? watching : unobserved
                try await Workload.warmUp(notification, via: chosen, inFlight: streams)
                result = try await Workload.run(notification, via: chosen, devices: count, inFlight: streams)
            }
            print(
                "\(only): \(result.outcomes) outcomes, \(Int(result.rate)) pushes/s, \(String(format: "%.3f", result.cpuPer100k)) CPU s per 100k"
            )
            return
        }
        try await Workload.warmUp(notification, via: connector, inFlight: streams)
        try await Workload.warmUp(notification, via: unobserved, inFlight: streams)
        try await Workload.warmUp(notification, via: watching, inFlight: streams)
        var ours = Workload.Result()
        var singles = Workload.Result()
        var singlesRatios: [Double] = []
        var bare = Workload.Result()
        var watched = Workload.Result()
        var floor = Workload.Result()
        var coalescedFloor = Workload.Result()  // the C loop with swift-apns' write coalescing
        var segments = (ours: 0, floor: 0, coalescedFloor: 0)  // TCP segments on loopback, both directions
        func counted<T>(_ total: inout Int, _ run: () async throws -> T) async rethrows -> T {
            let before = Usage.tcpSegmentsSent() ?? 0
            let result = try await run()
            total += (Usage.tcpSegmentsSent() ?? 0) - before
            return result
        }
        var reference = Workload.Result()
        var onTransport = Workload.Result()  // the bulk send from a task preferring `connector.taskExecutor`
        let rounds = max(1, min(self.rounds, count / 100))
        var oursPeakRSS = 0
        for round in 0..<rounds {
            let share = count / rounds + (round < count % rounds ? 1 : 0)
            let bulkRound = try await counted(&segments.ours) {
                try await Workload.run(notification, via: connector, devices: share, inFlight: streams)
            }
            ours.add(bulkRound)
            if round == 0 { oursPeakRSS = Usage.peakRSS() }  // before the references add their own
            // The same pushes as a task group of single sends, right after: paired per round.
            let singleRound = try await Workload.runSingles(
                notification, via: connector, devices: share, inFlight: streams)
            singles.add(singleRound)
            if singleRound.rate > 0 { singlesRatios.append(bulkRound.rate / singleRound.rate) }
            bare.add(try await Workload.run(notification, via: unobserved, devices: share, inFlight: streams))
            watched.add(try await Workload.run(notification, via: watching, devices: share, inFlight: streams))
            onTransport.add(
                try await withTaskExecutorPreference(connector.taskExecutor) {
                    try await Workload.run(notification, via: connector, devices: share, inFlight: streams)
                })
            floor.add(
                try await counted(&segments.floor) {
                    try LibcurlReference.run(
                        port: server.port, caPath: server.caPath, count: share, streams: streams, token: token,
                        request: request, coalesce: false)
                })
            coalescedFloor.add(
                try await counted(&segments.coalescedFloor) {
                    try LibcurlReference.run(
                        port: server.port, caPath: server.caPath, count: share, streams: streams, token: token,
                        request: request, coalesce: true)
                })
            if let h2load {
                reference.add(
                    try H2Load.run(
                        h2load, port: server.port, count: share, streams: streams, token: token, request: request))
            }
        }
        rows.append(
            ("swift-apns bulk send pushes/s (\(count), 1 connection, \(streams) streams)", Format.rate(ours.rate)))
        rows.append(("swift-apns client CPU s per 100k (user+sys)", Format.seconds(ours.cpuPer100k)))
        rows.append(("swift-apns peak RSS (first round, before the references ran)", Format.megabytes(oursPeakRSS)))
        rows.append(("swift-apns connections opened (CURLINFO_NUM_CONNECTS)", "\(connector.connectionsOpened)"))
        rows.append(("swift-apns outcomes / devices", "\(ours.outcomes) / \(count)"))
        rows.append(("task group of \(streams) single sends, pushes/s", Format.rate(singles.rate)))
        rows.append(("task group of single sends, CPU s per 100k", Format.seconds(singles.cpuPer100k)))
        rows.append(
            (
                "ratio bulk / single sends, pushes/s (median of per-round ratios; target >= 1.1)",
                Format.ratio(Serialization.median(singlesRatios))
            ))
        rows.append(
            (
                "ratio bulk / single sends, CPU per push (target <= 1)",
                Format.ratio(ours.cpuPer100k / singles.cpuPer100k)
            ))
        rows.append(("swift-apns without observability, CPU s per 100k", Format.seconds(bare.cpuPer100k)))
        rows.append(
            (
                "observability overhead (log+metrics+tracing, no-op backends), CPU per push (target <= 3 %)",
                String(format: "%+.1f %%", (ours.cpuPer100k / bare.cpuPer100k - 1) * 100)
            ))
        rows.append(
            (
                "the same with a listening logger (GOAWAY watch: libcurl verbose), CPU per push",
                String(format: "%+.1f %%", (watched.cpuPer100k / bare.cpuPer100k - 1) * 100)
            ))
        rows.append(("libcurl alone (C multi loop, same requests) pushes/s", Format.rate(floor.rate)))
        rows.append(("libcurl alone CPU s per 100k (user+sys)", Format.seconds(floor.cpuPer100k)))
        rows.append(
            (
                "ratio swift-apns / libcurl alone, CPU per push (target <= 1.3)",
                Format.ratio(ours.cpuPer100k / floor.cpuPer100k)
            ))
        rows.append(
            ("ratio swift-apns / libcurl alone, pushes/s (target >= 0.85)", Format.ratio(ours.rate / floor.rate)))
        rows.append(
            ("libcurl alone with swift-apns' write coalescing (TCP_CORK), pushes/s", Format.rate(coalescedFloor.rate)))
        rows.append(("the same, CPU s per 100k (user+sys)", Format.seconds(coalescedFloor.cpuPer100k)))
        rows.append(
            (
                "ratio swift-apns / libcurl alone with write coalescing, CPU per push (the Swift side's own cost)",
                Format.ratio(ours.cpuPer100k / coalescedFloor.cpuPer100k)
            ))
        if Usage.tcpSegmentsSent() != nil {
            let perPush = [segments.ours, segments.floor, segments.coalescedFloor].map {
                String(format: "%.2f", Double($0) / Double(count))
            }
            rows.append(
                (
                    "TCP segments per push, both directions: swift-apns / libcurl alone / with coalescing",
                    perPush.joined(separator: " / ")
                ))
        }
        rows.append(("the bulk send on the connector's task executor, pushes/s", Format.rate(onTransport.rate)))
        rows.append(("the same, CPU s per 100k (user+sys)", Format.seconds(onTransport.cpuPer100k)))
        rows.append(
            (
                "ratio on the task executor / libcurl alone, CPU per push (target <= 1.3)",
                Format.ratio(onTransport.cpuPer100k / floor.cpuPer100k)
            ))
        rows.append(
            (
                "ratio on the task executor / libcurl alone, pushes/s (target >= 0.85)",
                Format.ratio(onTransport.rate / floor.rate)
            ))
        if h2load != nil {
            rows.append(
                ("h2load pushes/s (same server, 1 connection, \(streams) streams)", Format.rate(reference.rate)))
            rows.append(("h2load CPU s per 100k (user+sys)", Format.seconds(reference.cpuPer100k)))
            rows.append(
                ("ratio swift-apns / h2load, pushes/s (target >= 0.6)", Format.ratio(ours.rate / reference.rate)))
            rows.append(
                (
                    "ratio swift-apns / h2load, CPU per push (target <= 2)",
                    Format.ratio(ours.cpuPer100k / reference.cpuPer100k)
                ))
            rows.append(
                (
                    "ratio libcurl alone / h2load, CPU per push (floor of the above)",
                    Format.ratio(floor.cpuPer100k / reference.cpuPer100k)
                ))
        } else {
            rows.append(("h2load", skipH2load ? "skipped" : "not installed (apt-get install nghttp2-client)"))
        }

        // 4. Latency at low load: one send at a time, from an ordinary task and from one that prefers the
        // connector's task executor, alternating with the C loop in tenths (each after 100 to warm up),
        // so that a slow spell of the machine falls on all three alike.
        var ourLatencies: [Double] = []
        var cLatencies: [Double] = []
        var onTransportThread: [Double] = []  // the same sends from a task preferring `connector.taskExecutor`
        let tenth = max(1, latencyCount / 10)
        for first in stride(from: 0, to: latencyCount, by: tenth) {
            let part = min(tenth, latencyCount - first)
            ourLatencies += try await Workload.sequential(notification, via: connector, count: part)
            onTransportThread += try await withTaskExecutorPreference(connector.taskExecutor) {
                try await Workload.sequential(notification, via: connector, count: part)
            }
            cLatencies += try LibcurlReference.sequential(
                port: server.port, caPath: server.caPath, count: part, token: token, request: request)
        }
        if !ourLatencies.isEmpty {
            let (p50, p99) = (Workload.percentile(ourLatencies, 0.5), Workload.percentile(ourLatencies, 0.99))
            let (c50, c99) = (Workload.percentile(cLatencies, 0.5), Workload.percentile(cLatencies, 0.99))
            rows.append(
                (
                    "single send latency, one at a time (\(ourLatencies.count) sends): p50 / p99",
                    "\(Format.milliseconds(p50)) / \(Format.milliseconds(p99))"
                ))
            rows.append(
                (
                    "libcurl alone, the same sequential requests: p50 / p99",
                    "\(Format.milliseconds(c50)) / \(Format.milliseconds(c99))"
                ))
            rows.append(("ratio swift-apns / libcurl alone, p50", Format.ratio(p50 / c50)))
            rows.append(("ratio swift-apns / libcurl alone, p99 (target <= 1.5)", Format.ratio(p99 / c99)))
            let (t50, t99) = (Workload.percentile(onTransportThread, 0.5), Workload.percentile(onTransportThread, 0.99))
            rows.append(
                (
                    "the same, on the connector's task executor: p50 / p99",
                    "\(Format.milliseconds(t50)) / \(Format.milliseconds(t99))"
                ))
            rows.append(("ratio on the task executor / libcurl alone, p50", Format.ratio(t50 / c50)))
            rows.append(("ratio on the task executor / libcurl alone, p99 (target <= 1.5)", Format.ratio(t99 / c99)))
        }

        // 5. Serialisation.
        let serialization = Serialization.measure(iterations: serializationIterations)
        rows.append(
            (
                "serialise alert + app data, swift-apns ns/op (median of 20 rounds)",
                String(format: "%.0f", serialization.ours)
            ))
        rows.append(
            (
                "serialise alert + app data, JSONEncoder(.sortedKeys) ns/op",
                String(format: "%.0f", serialization.jsonEncoder)
            ))
        rows.append(("ratio JSONEncoder / swift-apns (target >= 5)", Format.ratio(serialization.ratio)))

        // 6. Memory: peak RSS after 100k and after memoryCount sends, in one bulk send.
        let reset = Usage.resetPeakRSS()  // the memory run's own peak, not the references'
        if !reset { print("note: could not reset peak RSS; the memory rows include the earlier runs") }
        let memory = try await Workload.memory(
            notification, via: connector, devices: memoryCount, checkpoint: min(100_000, memoryCount), inFlight: streams
        )
        rows.append(("peak RSS after \(min(100_000, memoryCount)) sends", Format.megabytes(memory.atCheckpoint)))
        rows.append(("peak RSS after \(memoryCount) sends (target: within 5 MB)", Format.megabytes(memory.atEnd)))
        rows.append(("memory run outcomes / devices", "\(memory.outcomes) / \(memoryCount)"))

        // 7. The pool curve: N connections against a server with several threads (last: its connectors
        // grow the heap, which would shift the memory rows).
        let sizes = poolSizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter {
            $0 >= 1
        }
        if poolCount > 0, !sizes.isEmpty {
            let poolServer = try MockServerProcess.launch(key: key, threads: poolServerThreads)
            defer { poolServer.stop() }
            let curve = try await PoolCurve.measure(
                notification, key: key, server: poolServer, sizes: sizes, pushes: poolCount, streams: streams)
            for point in curve {
                rows.append(
                    (
                        "pool of \(point.size) connection\(point.size == 1 ? "" : "s") (\(poolServerThreads)-thread server), pushes/s; connections opened",
                        "\(Format.rate(point.result.rate)); \(point.connections)"
                    ))
            }
            if let first = curve.first, first.result.rate > 0 {
                rows.append(
                    (
                        "pool speed-up over 1 connection, N = \(curve.map { "\($0.size)" }.joined(separator: ", "))",
                        curve.map { Format.ratio($0.result.rate / first.result.rate) }.joined(separator: ", ")
                    ))
            }
        }

        // 8. Far from APNs: the round trip as the limit (last: each point starts its own server).
        rows += try await far(notification, key: key, request: request, token: token)

        print(Format.table(rows))
        let lost = ours.outcomes != count || memory.outcomes != memoryCount
        if lost { throw ExitCode(1) }
    }
}

extension Benchmark {
    /// The far-from-APNs rows (``FarFromAPNs``), against the server `--far-server` names.
    func far(
        _ notification: AlertNotification<Workload.Game>, key: MockCertificateAuthority.SigningKey,
        request: APNsRequest, token: String
    ) async throws -> [(String, String)] {
        func list(_ text: String) -> [Int] {
            text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 >= 1 }
        }
        let rtts = list(self.rtts)
        guard !rtts.isEmpty else { return [] }
        let streams = list(farStreams)
        let launch: (Int) throws -> MockServerProcess
        switch farServer {
        case "mock":
            launch = { [serverThreads] in
                try MockServerProcess.launch(key: key, threads: serverThreads, delayMilliseconds: $0)
            }
        case "nginx":
            guard let nginx = NginxDelayServer.find() else {
                throw ValidationError(
                    "--far-server nginx needs nginx and its echo module (apt install nginx-light libnginx-mod-http-echo)"
                )
            }
            launch = { try NginxDelayServer.launch(nginx, delayMilliseconds: $0, streams: streams.max() ?? 1_000) }
        case "nio", "nio-late":
            launch = { [farServer] in
                try NIODelayServer.launch(
                    delayMilliseconds: $0, streams: streams.max() ?? 1_000, statistics: farServerStatistics,
                    late: farServer == "nio-late")
            }
        default: throw ValidationError("--far-server is mock, nginx, nio or nio-late")
        }
        let points = try await FarFromAPNs.measure(
            notification, key: key, rtts: rtts, connections: list(farConnections), streams: streams, pushes: farCount,
            rounds: farRounds, inFlight: farInFlight, additional: farAdditional, request: request, token: token,
            h2load: skipH2load ? nil : H2Load.find(), launch: launch)
        return [
            (
                "far from APNs: the delayed server",
                (farServer == "mock"
                    ? "the mock APNs (answers late beyond about 5,000/s per connection)"
                    : farServer == "nio"
                        ? "SwiftNIO's HTTP/2 server, answers scheduled"
                        : farServer == "nio-late"
                            ? "SwiftNIO's HTTP/2 server on two threads, an apns-id from /dev/urandom per answer"
                            : "nginx with echo_sleep")
                    + (farInFlight.map { "; maximumInFlight \($0)" } ?? "")
                    + (farAdditional > 0 ? "; additionalConnectionsWhenSlow \(farAdditional)" : "")
            )
        ]
            + FarFromAPNs.rows(points)
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

/// The entry point: a synchronous `main` that runs the command on a detached task and gives the
/// main thread to the main run loop, which runs the main queue, so main-actor code runs as in any
/// program (the `actors` rows need it). Debian 12's valgrind (3.19) crashes on a Swift `async` main
/// and on `dispatchMain()`, and `valgrind --tool=callgrind` is how this benchmark's instruction
/// counts are taken (Benchmarks/callgrind.sh); a synchronous main in the run loop runs under it.
@main
enum BenchmarkMain {
    static func main() {
        Task.detached {
            do {
                var command = try Benchmark.parseAsRoot()
                if var asynchronous = command as? any AsyncParsableCommand {
                    try await asynchronous.run()
                } else {
                    try command.run()
                }
            } catch {
                Benchmark.exit(withError: error)
            }
            Benchmark.exit()
        }
        while true { RunLoop.main.run() }
    }
}
