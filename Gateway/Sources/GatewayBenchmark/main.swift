import APNs
import APNsGateway
import GatewayMeasuring
import APNsMockServer
import Foundation
import Hummingbird
import Logging
import Synchronization
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The gateway's throughput next to the library's own bulk send, in one run against one mock APNs:
//
//   direct     bulk `send(_:via:to:)` of N devices through a token connector
//   accepted   POST /v1/notifications (one device each, 8 at a time) answered 202, dispatcher idle
//   end-to-end N devices posted in requests of --per-request devices, until every outcome is written
//
//   instances  with --instances N (PostgreSQL): end to end again with N instances on one database,
//              each with its own pool of database connections, connector and dispatcher (as N
//              processes would have), against the one-instance figure of the same run
//
//   claim      with --claim-history N: a claim of 2,000 queued device-sends (best of 5), on the
//              queue as it is and again after N finished device-sends were added (a queue's history)
//
//   backlog    with --backlog N alone (nothing else runs): a claim of one batch of due
//              device-sends and a read of the queue's depth (what /readyz and back-pressure read),
//              best of several each, behind a small backlog of device-sends waiting out a back-off
//              (claimed once and queued again for later, as a pause or a device's back-off leaves
//              them), then behind N: the two should cost the same
//
//   fairness   with --fairness N alone: app A posts N devices; once they are being sent, app B
//              posts one; how long after its POST B's device is accepted by APNs, how much of A's
//              backlog was still queued then, and how long A's backlog took to drain (what B
//              would have waited behind it first-in first-out)
//
//   CPU        per device-send in the direct and the end-to-end phase: the whole machine's (Linux,
//              /proc/stat: the benchmark, the mock and PostgreSQL together) and this process's own
//
// The target: end-to-end device-sends/s ≥ 0.5 × direct. Build with -c release for figures
// (`swift run -c release --package-path Gateway GatewayBenchmark`); CI runs it small in debug.

struct Options {
    var devices = 50_000
    var perRequest = 5_000
    var acceptRequests = 2_000
    var postgres: String?
    /// Finished device-sends to add before the claim is timed again (0: no claim figures).
    var claimHistory = 0
    /// Instances for the second end-to-end figure (1: none).
    var instances = 1
    /// The dispatcher's claim size and batches in flight (its defaults unless given).
    var claimBatch: Int?
    var concurrentBatches: Int?
    /// Waiting device-sends for the backlog figures (0: the throughput figures instead).
    var backlog = 0
    /// App A's backlog for the fairness figures (0: none).
    var fairness = 0

    init(_ arguments: [String]) throws {
        var iterator = arguments.dropFirst().makeIterator()
        func value(_ name: String) throws -> String {
            guard let value = iterator.next() else { throw SetupError("\(name) needs a value") }
            return value
        }
        func positive(_ name: String) throws -> Int {
            guard let number = Int(try value(name)), number > 0 else {
                throw SetupError("\(name) takes a positive whole number")
            }
            return number
        }
        while let argument = iterator.next() {
            switch argument {
            case "--devices": devices = try positive(argument)
            case "--per-request": perRequest = try positive(argument)
            case "--accept-requests": acceptRequests = try positive(argument)
            case "--postgres": postgres = try value(argument)
            case "--claim-history": claimHistory = try positive(argument)
            case "--claim-batch": claimBatch = try positive(argument)
            case "--concurrent-batches": concurrentBatches = try positive(argument)
            case "--backlog":
                backlog = try positive(argument)
                guard backlog > 10_000 else { throw SetupError("--backlog takes more than 10000") }
            case "--fairness": fairness = try positive(argument)
            case "--instances":
                instances = try positive(argument)
                guard instances <= 8 else { throw SetupError("--instances takes 1 to 8") }
            default:
                throw SetupError(
                    "unknown option \(argument); use --devices N --per-request N --accept-requests N [--postgres URL] [--claim-history N] [--instances N] [--claim-batch N] [--concurrent-batches N] | [--postgres URL] --backlog N | [--postgres URL] --fairness N"
                )
            }
        }
        guard instances == 1 || postgres != nil else {
            throw SetupError("--instances needs --postgres: instances share a queue on PostgreSQL")
        }
    }
}

struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func rate(_ count: Int, _ elapsed: Duration) -> Double { Double(count) / max(elapsed.seconds, 1e-9) }

/// The whole machine's busy CPU time so far (every process: the benchmark, its mock and the
/// database server), from `/proc/stat` on Linux; nil elsewhere. A phase's difference divided by its
/// device-sends is what each cost the machine, a figure the machine's noise moves less than a rate:
/// on two busy cores a rate is the cores divided by that cost.
func machineBusy() -> Duration? {
    #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        // user nice system idle iowait irq softirq steal …, in clock ticks (USER_HZ)
        let ticks = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        let perSecond = sysconf(Int32(_SC_CLK_TCK))
        guard ticks.count >= 5, perSecond > 0 else { return nil }
        let busy = ticks.reduce(0, +) - ticks[3] - ticks[4]
        return .microseconds(busy * 1_000_000 / perSecond)
    #else
        return nil
    #endif
}

/// This process's CPU time so far (user and system, every thread: the gateway, the library, the
/// mock APNs), so that a phase's machine figure splits into this process and the rest (on
/// PostgreSQL, mostly the database server).
func processBusy() -> Duration {
    var usage = rusage()
    getrusage(rusageSelf, &usage)
    func duration(_ time: timeval) -> Duration { .seconds(time.tv_sec) + .microseconds(Int(time.tv_usec)) }
    return duration(usage.ru_utime) + duration(usage.ru_stime)
}

#if os(Linux)
    let rusageSelf = RUSAGE_SELF.rawValue
#else
    let rusageSelf = RUSAGE_SELF
#endif

/// CPU per device-send between two readings, in microseconds.
func microsecondsPerSend(_ from: Duration?, _ to: Duration?, count: Int) -> Double? {
    guard let from, let to else { return nil }
    return (to - from).seconds * 1e6 / Double(count)
}

/// The answer's status and, for a 202, the queued notification's id.
func post(
    _ body: String, to url: URL, key: String, session: URLSession
) async throws -> (
    status: Int, id: String?
) {
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
    request.httpBody = Data(body.utf8)
    let (data, response) = try await session.data(for: request)
    let id = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["id"] as? String
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, id)
}

func alert(to tokens: some Sequence<String>, app: String = "com.example.app") -> String {
    #"{"push-type":"alert","bundle-id":"\#(app)","alert":{"title":"Hi","body":"There"},"devices":["#
        + tokens.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
}

let options: Options
do {
    options = try Options(CommandLine.arguments)
} catch {
    FileHandle.standardError.write(Data("GatewayBenchmark: \(error)\n".utf8))
    exit(2)
}

/// The queue the options name, prepared: PostgreSQL with its pool running (cancel the task to
/// stop it), or a new SQLite file in `folder`.
func preparedStore(_ options: Options, in folder: URL) async throws -> (any GatewayStore, Task<Void, Never>?) {
    let store: any GatewayStore
    var pool: Task<Void, Never>?
    if let url = options.postgres {
        let postgres = try PostgresStore(url: url, logger: Logger(label: "benchmark"))
        pool = Task { await postgres.run() }
        store = postgres
    } else {
        store = try SQLiteStore(path: folder.appendingPathComponent("queue.sqlite").path)
    }
    try await store.prepare()
    return (store, pool)
}

/// The backlog figures (`--backlog N`): claim and depth behind a small backlog of waiting
/// device-sends, then behind N.
func backlogBenchmark(_ options: Options) async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-backlog-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, pool) = try await preparedStore(options, in: folder)
    print("gateway backlog benchmark: queue \(options.postgres == nil ? "SQLite" : "PostgreSQL")")
    var waiting = 0
    var figures: [(backlog: Int, claim: Double, depth: Double)] = []
    for target in [10_000, options.backlog] {
        let filled = ContinuousClock.now
        // Queued, claimed and queued again for a day later, 5,000 at a time: the store's own path.
        while waiting < target {
            let count = min(5_000, target - waiting)
            let created = Date().addingTimeInterval(-3_600)
            let queued = QueuedNotification(
                id: "backlog-\(UUID().uuidString)", keyName: "backlog", pushType: "alert", app: "com.example.app",
                storedJSON: "{}", tokens: (0..<count).map { String(format: "%064x", waiting + $0 + 1) },
                createdAt: created)
            guard try await store.enqueue(queued, maximumQueueDepth: .max) == .accepted else {
                throw SetupError("the backlog's notification was refused")
            }
            let now = Date()
            let claimed = try await store.claim(owner: "backlog", limit: count, now: now, leaseUntil: now + 600)
            let outcomes = claimed.flatMap { notification in
                notification.deliveries.map {
                    DeliveryOutcome(
                        notificationID: notification.id, position: $0.position, token: $0.token, app: "com.example.app",
                        retryAt: now + 86_400, countsAsAttempt: false)
                }
            }
            guard outcomes.count == count else {
                throw SetupError("the backlog's claim took \(outcomes.count) of \(count)")
            }
            _ = try await store.complete(outcomes, owner: "backlog", now: now)
            waiting += count
        }
        print(
            "backlog: \(waiting) waiting device-sends (filled in \(String(format: "%.1f", (ContinuousClock.now - filled).seconds)) s)"
        )
        var depth = Double.infinity
        for _ in 0..<5 {
            let start = ContinuousClock.now
            let read = try await store.queueDepth()
            depth = min(depth, (ContinuousClock.now - start).seconds)
            guard read == waiting else { throw SetupError("the depth read \(read), not \(waiting)") }
        }
        figures.append((waiting, try await bestClaim(store), depth))
    }
    pool?.cancel()
    for figure in figures {
        print(
            "behind \(figure.backlog) waiting: claim of 2,000 \(String(format: "%.2f", figure.claim * 1000)) ms, depth \(String(format: "%.3f", figure.depth * 1000)) ms (best of 5)"
        )
    }
    if let small = figures.first, let large = figures.last {
        print(
            "ratio \(large.backlog) / \(small.backlog): claim \(String(format: "%.2f", large.claim / small.claim)), depth \(String(format: "%.2f", large.depth / small.depth))"
        )
    }
}

func benchmark(_ options: Options) async throws {
    let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
    var mockConfiguration = MockAPNsServer.Configuration(signingKeys: [signingKey])
    mockConfiguration.recordsRequests = false
    mockConfiguration.minimumTokenUpdateInterval = nil
    let server = try await MockAPNsServer.start(mockConfiguration)
    let transport = {
        var configuration = TransportConfiguration()
        configuration.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
        return configuration
    }()
    func connector() throws -> TokenConnector {
        try TokenConnector(
            teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
            environment: .custom(host: server.host, port: server.port), transport: transport)
    }
    let tokens = (0..<options.devices).map { String(format: "%064x", $0 + 1) }
    let devices = try tokens.map { try Device(token: $0) }
    print(
        "gateway benchmark: \(options.devices) devices, \(options.perRequest) per request, \(options.acceptRequests) single-device POSTs, queue \(options.postgres == nil ? "SQLite" : "PostgreSQL")"
    )

    // direct
    let direct = try connector()
    let notification = AlertNotification(bundleID: "com.example.app") {
        Alert {
            Title("Hi"); Body("There")
        }
    }
    _ = try await send(notification, via: direct, to: devices.prefix(200))  // warm up: connection, token
    var start = ContinuousClock.now
    let directBusy = (machine: machineBusy(), process: processBusy())
    let summary = try await send(notification, via: direct, to: devices)
    let directElapsed = ContinuousClock.now - start
    let directCPU = microsecondsPerSend(directBusy.machine, machineBusy(), count: options.devices)
    let directProcessCPU = microsecondsPerSend(directBusy.process, processBusy(), count: options.devices)
    guard summary.accepted == options.devices else { throw SetupError("direct: \(summary)") }
    await direct.shutdown()

    // the gateway
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-benchmark-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, pool) = try await preparedStore(options, in: folder)
    let key = GatewayAPI.makeAPIKey()
    try await store.addAPIKey(
        APIKey(
            name: "bench-\(UUID().uuidString.prefix(8))", hash: GatewayAPI.hash(apiKey: key), apps: ["com.example.app"],
            requestsPerSecond: 1e9))
    let gatewayConnector = try connector()
    var sending = Dispatcher.Configuration()
    sending.instance = "benchmark-\(UUID().uuidString.prefix(8))"
    if let claimBatch = options.claimBatch { sending.claimBatch = claimBatch }
    if let concurrentBatches = options.concurrentBatches { sending.concurrentBatches = concurrentBatches }
    let dispatcher = Dispatcher(
        store: store, connector: AnyConnector(gatewayConnector), configuration: sending,
        logger: Logger(label: "benchmark"))
    var limits = GatewayAPI.Configuration()
    limits.maximumDevicesPerRequest = max(options.perRequest, 5_000)
    limits.maximumBodyBytes = max(1 << 20, options.perRequest * 70 + 1024)
    let awake = Mutex<[Dispatcher]>([dispatcher])  // the running ones, woken by each accepted POST
    let api = GatewayAPI(
        store: store, configuration: limits, authenticationMethod: .token,
        onAccepted: { for running in awake.withLock({ $0 }) { running.wake() } })
    let port = Mutex<Int?>(nil)
    var quiet = Logger(label: "benchmark-http")
    quiet.logLevel = .critical  // the server is cancelled at the end, which it reports as errors
    let app = Application(
        router: api.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } }, logger: quiet)
    let serving = Task { try await app.runService() }
    while port.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
    let endpoint = URL(string: "http://127.0.0.1:\(port.withLock { $0 } ?? 0)/v1/notifications")!
    let session = URLSession(configuration: .ephemeral)

    // accepted: the dispatcher is not running, so this is the API and the durable insert alone.
    start = ContinuousClock.now
    let acceptedCount = try await withThrowingTaskGroup(of: Int.self) { group in
        var next = 0
        var accepted = 0
        for _ in 0..<8 where next < options.acceptRequests {
            let token = tokens[next % tokens.count]
            group.addTask {
                try await post(alert(to: [token]), to: endpoint, key: key, session: session).status == 202 ? 1 : 0
            }
            next += 1
        }
        while let one = try await group.next() {
            accepted += one
            if next < options.acceptRequests {
                let token = tokens[next % tokens.count]
                group.addTask {
                    try await post(alert(to: [token]), to: endpoint, key: key, session: session).status == 202 ? 1 : 0
                }
                next += 1
            }
        }
        return accepted
    }
    let acceptElapsed = ContinuousClock.now - start
    guard acceptedCount == options.acceptRequests else {
        throw SetupError("accepted \(acceptedCount) of \(options.acceptRequests)")
    }
    while try await dispatcher.dispatchOnce() > 0 {}  // send those, untimed

    // end to end: the dispatchers run; post every device, then wait for the last outcome.
    func endToEnd(
        _ dispatchers: [Dispatcher]
    ) async throws -> (
        posted: Duration, finished: Duration, cpu: Double?, processCPU: Double?
    ) {
        awake.withLock { $0 = dispatchers }
        let running = dispatchers.map { dispatcher in Task { try await dispatcher.run() } }
        let start = ContinuousClock.now
        let busy = (machine: machineBusy(), process: processBusy())
        let startDate = Date()
        var offset = 0
        var ids: [String] = []
        while offset < tokens.count {
            let part = tokens[offset..<min(offset + options.perRequest, tokens.count)]
            let (status, id) = try await post(alert(to: part), to: endpoint, key: key, session: session)
            guard status == 202, let id else {
                throw SetupError("POST of \(part.count) devices answered \(status)")
            }
            ids.append(id)
            offset += part.count
        }
        let posted = ContinuousClock.now - start
        // Counting the queue costs the database a scan of the unfinished rows' index, so it is
        // counted only every 250 ms; the end is when the last outcome was written, read afterwards
        // (untimed).
        while try await store.queueDepth() > 0 { try await Task.sleep(for: .milliseconds(250)) }
        let cpu = microsecondsPerSend(busy.machine, machineBusy(), count: tokens.count)
        let processCPU = microsecondsPerSend(busy.process, processBusy(), count: tokens.count)
        for task in running { task.cancel() }
        for task in running { _ = await task.result }
        var lastWritten = startDate
        for id in ids {
            guard let progress = try await store.progress(of: id) else { throw SetupError("\(id) is gone") }
            for delivery in progress.deliveries {
                guard let finishedAt = delivery.finishedAt else { throw SetupError("\(id) is not finished") }
                lastWritten = max(lastWritten, finishedAt)
            }
        }
        return (posted, .seconds(lastWritten.timeIntervalSince(startDate)), cpu, processCPU)
    }
    let (postedElapsed, endToEndElapsed, endToEndCPU, endToEndProcessCPU) = try await endToEnd([dispatcher])
    await gatewayConnector.shutdown()

    // instances: the same again with N instances on the one database, each as its own process
    // would be (a pool of database connections, a connector, a dispatcher with its own name).
    var instancesElapsed: Duration?
    if options.instances > 1, let url = options.postgres {
        var dispatchers: [Dispatcher] = []
        var connectors: [TokenConnector] = []
        var pools: [Task<Void, Never>] = []
        for number in 1...options.instances {
            let own = try PostgresStore(url: url, logger: Logger(label: "benchmark"))
            pools.append(Task { await own.run() })
            await own.untilRunning()
            let instanceConnector = try connector()
            connectors.append(instanceConnector)
            var configuration = sending
            configuration.instance = "\(sending.instance)-\(number)"
            dispatchers.append(
                Dispatcher(
                    store: own, connector: AnyConnector(instanceConnector), configuration: configuration,
                    logger: Logger(label: "benchmark")))
        }
        instancesElapsed = try await endToEnd(dispatchers).finished
        for instanceConnector in connectors { await instanceConnector.shutdown() }
        for pool in pools { pool.cancel() }
    }
    serving.cancel()

    var claimFigures: (empty: Double, history: Double)?
    if options.claimHistory > 0 {
        let empty = try await bestClaim(store)
        let filled = ContinuousClock.now
        if let sqlite = store as? SQLiteStore {
            try await sqlite.addFinishedHistory(count: options.claimHistory)
        } else if let postgres = store as? PostgresStore {
            try await postgres.addFinishedHistory(count: options.claimHistory)
        }
        print(
            "claim: \(options.claimHistory) finished device-sends added in \(String(format: "%.1f", (ContinuousClock.now - filled).seconds)) s"
        )
        claimFigures = (empty, try await bestClaim(store))
    }
    pool?.cancel()
    try await server.stop()

    let directRate = rate(options.devices, directElapsed)
    let endToEndRate = rate(options.devices, endToEndElapsed)
    func figure(_ value: Double) -> String { String(Int(value.rounded())) }
    print("direct bulk send                 \(figure(directRate)) device-sends/s")
    print(
        "gateway: POST accepted           \(figure(rate(options.acceptRequests, acceptElapsed))) notifications/s (1 device each, 8 concurrent)"
    )
    print("gateway: devices posted          \(figure(rate(options.devices, postedElapsed))) device-sends/s accepted")
    print("gateway: end to end              \(figure(endToEndRate)) device-sends/s (POST to last outcome written)")
    print(
        "end to end / direct              \(String(format: "%.2f", endToEndRate / directRate)) (target ≥ 0.50: \(endToEndRate / directRate >= 0.5 ? "met" : "not met"))"
    )
    func micro(_ value: Double?) -> String { value.map { String(format: "%.1f µs", $0) } ?? "-" }
    if let directCPU, let endToEndCPU {
        print(
            "machine CPU per device-send        direct \(micro(directCPU)), end to end \(micro(endToEndCPU)) (direct / end to end \(String(format: "%.2f", directCPU / endToEndCPU)))"
        )
    }
    print(
        "this process's CPU per device-send direct \(micro(directProcessCPU)), end to end \(micro(endToEndProcessCPU)) (gateway, library and mock; the machine's figure less this is the database server and the rest)"
    )
    if let instancesElapsed {
        let instancesRate = rate(options.devices, instancesElapsed)
        print(
            "gateway: end to end, \(options.instances) instances \(figure(instancesRate)) device-sends/s (\(String(format: "%.2f", instancesRate / endToEndRate)) × one instance; target ≥ 1.5 for two)"
        )
    }
    if let claimFigures {
        print("claim of 2,000, queue as it was    \(String(format: "%.2f", claimFigures.empty * 1000)) ms (best of 5)")
        print(
            "claim of 2,000, after \(options.claimHistory) finished  \(String(format: "%.2f", claimFigures.history * 1000)) ms (best of 5; ratio \(String(format: "%.2f", claimFigures.history / claimFigures.empty)))"
        )
    }
}

/// The best of five claims of 2,000 queued device-sends, in seconds; each claimed batch is then
/// finished, so the queue is as it was.
func bestClaim(_ store: any GatewayStore) async throws -> Double {
    var best = Double.infinity
    for round in 0..<5 {
        let id = "claim-\(UUID().uuidString)"
        let tokens = (0..<2_000).map { String(format: "%064x", round * 2_000 + $0 + 1) }
        let queued = QueuedNotification(
            id: id, keyName: "claim", pushType: "alert", app: "com.example.app", storedJSON: "{}", tokens: tokens,
            createdAt: Date())
        guard try await store.enqueue(queued, maximumQueueDepth: .max) == .accepted else {
            throw SetupError("the claim benchmark's notification was refused")
        }
        let now = Date()
        let start = ContinuousClock.now
        let claimed = try await store.claim(owner: "claim-benchmark", limit: 2_000, now: now, leaseUntil: now + 60)
        best = min(best, (ContinuousClock.now - start).seconds)
        let count = claimed.reduce(0) { $0 + $1.deliveries.count }
        guard count == 2_000 else { throw SetupError("the claim took \(count) of 2,000") }
        _ = try await store.complete(
            claimed.flatMap { notification in
                notification.deliveries.map {
                    DeliveryOutcome(
                        notificationID: notification.id, position: $0.position, token: $0.token, app: "com.example.app",
                        status: 200)
                }
            }, owner: "claim-benchmark", now: now)
    }
    return best
}

/// The fairness figures (`--fairness N`): app B's one device behind app A's N, through the API
/// and the dispatcher, against one mock APNs.
func fairnessBenchmark(_ options: Options) async throws {
    let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
    var mockConfiguration = MockAPNsServer.Configuration(signingKeys: [signingKey])
    mockConfiguration.recordsRequests = false
    let server = try await MockAPNsServer.start(mockConfiguration)
    var transport = TransportConfiguration()
    transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
    let connector = try TokenConnector(
        teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
        environment: .custom(host: server.host, port: server.port), transport: transport)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-fairness-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, pool) = try await preparedStore(options, in: folder)
    let key = GatewayAPI.makeAPIKey()
    try await store.addAPIKey(
        APIKey(
            name: "fairness-\(UUID().uuidString.prefix(8))", hash: GatewayAPI.hash(apiKey: key),
            apps: ["com.example.a", "com.example.b"], requestsPerSecond: 1e9))
    var sending = Dispatcher.Configuration()
    sending.instance = "fairness-\(UUID().uuidString.prefix(8))"
    let dispatcher = Dispatcher(
        store: store, connector: AnyConnector(connector), configuration: sending, logger: Logger(label: "benchmark"))
    let api = GatewayAPI(store: store, authenticationMethod: .token, onAccepted: { dispatcher.wake() })
    let port = Mutex<Int?>(nil)
    var quiet = Logger(label: "benchmark-http")
    quiet.logLevel = .critical
    let app = Application(
        router: api.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } }, logger: quiet)
    let serving = Task { try await app.runService() }
    while port.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
    let endpoint = URL(string: "http://127.0.0.1:\(port.withLock { $0 } ?? 0)/v1/notifications")!
    let session = URLSession(configuration: .ephemeral)
    print(
        "gateway fairness benchmark: app A \(options.fairness) devices, then app B 1, queue \(options.postgres == nil ? "SQLite" : "PostgreSQL")"
    )

    let running = Task { try await dispatcher.run() }
    let started = ContinuousClock.now
    var offset = 0
    while offset < options.fairness {
        let count = min(5_000, options.fairness - offset)
        let tokens = (offset..<(offset + count)).map { String(format: "%064x", $0 + 1) }
        let (status, _) = try await post(
            alert(to: tokens, app: "com.example.a"), to: endpoint, key: key, session: session)
        guard status == 202 else { throw SetupError("A's POST answered \(status)") }
        offset += count
    }
    let (status, id) = try await post(
        alert(to: [String(format: "%064x", 1)], app: "com.example.b"), to: endpoint, key: key, session: session)
    guard status == 202, let id else { throw SetupError("B's POST answered \(status)") }
    let posted = ContinuousClock.now
    var waitedFor: Duration?
    var aQueued = 0
    while waitedFor == nil {
        if let progress = try await store.progress(of: id), progress.deliveries.allSatisfy({ $0.state == "done" }) {
            guard progress.deliveries.first?.status == 200 else { throw SetupError("B's device: \(progress)") }
            waitedFor = ContinuousClock.now - posted
            aQueued = try await store.queueDepth(of: "com.example.a")
        } else {
            try await Task.sleep(for: .milliseconds(2))
        }
    }
    while try await store.queueDepth() > 0 { try await Task.sleep(for: .milliseconds(20)) }
    let drained = ContinuousClock.now - started
    running.cancel()
    _ = await running.result
    serving.cancel()
    await connector.shutdown()
    pool?.cancel()
    try await server.stop()
    let milliseconds = Int(((waitedFor ?? .zero).seconds * 1000).rounded())
    print(
        "app B's device accepted       \(milliseconds) ms after its POST (target ≤ 2000: \(milliseconds <= 2_000 ? "met" : "NOT met"))"
    )
    print("app A's device-sends queued   \(aQueued) of \(options.fairness) when B's was accepted")
    print(
        "app A's backlog drained in    \(String(format: "%.1f", drained.seconds)) s from its first POST (B's wait first-in first-out)"
    )
}

do {
    if options.fairness > 0 {
        try await fairnessBenchmark(options)
    } else if options.backlog > 0 {
        try await backlogBenchmark(options)
    } else {
        try await benchmark(options)
    }
} catch {
    FileHandle.standardError.write(Data("GatewayBenchmark: \(error)\n".utf8))
    exit(1)
}
