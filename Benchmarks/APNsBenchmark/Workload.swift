import APNs
import APNsMockServer
import Foundation

/// The notification, devices and measurements of the swift-apns runs.
enum Workload {
    struct Game: Encodable, Sendable {
        var gameID: String
        var round: Int
    }

    /// A ~200-byte alert with app data.
    static func notification() -> AlertNotification<Game> {
        AlertNotification(bundleID: "com.example.app", appData: Game(gameID: "12345678", round: 3)) {
            Alert {
                Title("Game Request")
                Subtitle("Five Card Draw")
                Body("Bob wants to play poker with you and two friends tonight")
            }
            Badge(1)
            Sound.default
            Category("GAME_INVITATION")
        }
    }

    /// Device `index`: a 32-byte token, 0xA5 bytes ending in the index, built on the stack as the
    /// C loop builds its (`device_url` in Benchmarks/CLibcurlReference), so both pay the same to
    /// make a push's device.
    static func device(_ index: Int) -> Device {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { bytes in
            bytes.initialize(repeating: 0xA5)
            for byte in 0..<8 { bytes[31 - byte] = UInt8(truncatingIfNeeded: UInt64(index) >> (8 * UInt64(byte))) }
            return (try? Device(tokenBytes: UnsafeBufferPointer(bytes))) ?? (try! Device(token: "00"))
        }
    }

    /// Devices made on demand, so a million of them cost no memory up front.
    struct Devices: Sequence, Sendable {
        let count: Int
        func makeIterator() -> Iterator { Iterator(count: count) }

        struct Iterator: IteratorProtocol {
            let count: Int
            var index = 0
            mutating func next() -> Device? {
                guard index < count else { return nil }
                defer { index += 1 }
                return Workload.device(index)
            }
        }
    }

    /// Pushes, seconds and CPU seconds, summed over rounds.
    struct Result {
        var pushes = 0
        var seconds = 0.0
        var cpuSeconds = 0.0
        var outcomes = 0
        /// With a warmup (``Workload/run(_:via:devices:inFlight:warmup:)``): its pushes, and the
        /// seconds from the send's start, first round trip included.
        var warmupPushes = 0
        var wholeSeconds = 0.0

        var rate: Double { seconds > 0 ? Double(pushes) / seconds : 0 }
        /// The rate from the send's start, the first round trip included.
        var wholeRate: Double { wholeSeconds > 0 ? Double(pushes + warmupPushes) / wholeSeconds : rate }
        var cpuPer100k: Double { pushes > 0 ? cpuSeconds / Double(pushes) * 100_000 : 0 }

        mutating func add(_ other: Result) {
            pushes += other.pushes
            seconds += other.seconds
            cpuSeconds += other.cpuSeconds
            outcomes += other.outcomes
            warmupPushes += other.warmupPushes
            wholeSeconds += other.wholeSeconds
        }
    }

    /// Connects and settles the token before anything is measured.
    static func warmUp(
        _ notification: AlertNotification<Game>, via connector: TokenConnector, inFlight: Int
    ) async throws {
        try await send(notification, via: connector, to: Devices(count: 1000), maximumInFlight: inFlight)
    }

    /// A bulk send to `devices` devices; `inFlight` nil takes the bulk send's default (the
    /// connector's capacity and a reserve), as a user's call does.
    ///
    /// With `warmup`, that many more devices are sent first and the clocks start at the warmup-th
    /// outcome, as the C loop's do (`libcurl_reference_run`): the rate is then the steady state's,
    /// without the first round trip, in which no client can have an answer.
    static func run(
        _ notification: AlertNotification<Game>, via connector: TokenConnector, devices: Int, inFlight: Int?,
        warmup: Int = 0
    ) async throws -> Result {
        var cpuBefore = Usage.cpuSeconds()
        let sendStart = ContinuousClock.now
        var start = sendStart
        var seen = 0
        let summary = try await send(
            notification, via: connector, to: Devices(count: devices + warmup), maximumInFlight: inFlight
        ) { _ in
            seen += 1
            if seen == warmup {
                start = .now
                cpuBefore = Usage.cpuSeconds()
            }
        }
        let outcomes = summary.total - min(warmup, summary.total)
        let failures = summary.total - summary.accepted
        let end = ContinuousClock.now
        let cpu = Usage.cpuSeconds() - cpuBefore
        if failures > 0 { print("warning: \(failures) sends were not accepted") }
        return Result(
            pushes: devices, seconds: (end - start).seconds, cpuSeconds: cpu, outcomes: outcomes,
            warmupPushes: warmup, wholeSeconds: warmup > 0 ? (end - sendStart).seconds : 0)
    }

    /// The naive alternative to the bulk send, the one a reader compares it with: a task group that
    /// keeps `inFlight` single `send`s going until `devices` are sent.
    static func runSingles(
        _ notification: AlertNotification<Game>, via connector: TokenConnector, devices: Int, inFlight: Int
    ) async throws -> Result {
        let cpuBefore = Usage.cpuSeconds()
        let start = ContinuousClock.now
        var outcomes = 0
        var accepted = 0
        await withTaskGroup(of: Bool.self) { group in
            var next = 0
            while next < min(inFlight, devices) {
                let device = Workload.device(next)
                group.addTask { (try? await send(notification, via: connector, to: device)) != nil }
                next += 1
            }
            while let ok = await group.next() {
                outcomes += 1
                if ok { accepted += 1 }
                if next < devices {
                    let device = Workload.device(next)
                    group.addTask { (try? await send(notification, via: connector, to: device)) != nil }
                    next += 1
                }
            }
        }
        let elapsed = (ContinuousClock.now - start).seconds
        let cpu = Usage.cpuSeconds() - cpuBefore
        if accepted < outcomes { print("warning: \(outcomes - accepted) single sends were not accepted") }
        return Result(pushes: devices, seconds: elapsed, cpuSeconds: cpu, outcomes: outcomes)
    }

    /// `count` single sends one after another (after 100 to warm up); each one's latency in seconds.
    static func sequential(
        _ notification: AlertNotification<Game>, via connector: TokenConnector, count: Int
    ) async throws -> [Double] {
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        for index in 0..<(count + 100) {
            let start = ContinuousClock.now
            _ = try await send(notification, via: connector, to: device(index))
            if index >= 100 { latencies.append((ContinuousClock.now - start).seconds) }
        }
        return latencies
    }

    /// The value at `fraction` (0.5 for the median) of `values`, by the nearest-rank method.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }

    static func memory(
        _ notification: AlertNotification<Game>, via connector: TokenConnector, devices: Int, checkpoint: Int,
        inFlight: Int
    ) async throws -> (atCheckpoint: Int, atEnd: Int, outcomes: Int) {
        var outcomes = 0
        var atCheckpoint = 0
        try await send(notification, via: connector, to: Devices(count: devices), maximumInFlight: inFlight) { _ in
            outcomes += 1
            if outcomes == checkpoint { atCheckpoint = Usage.peakRSS() }
        }
        return (atCheckpoint, Usage.peakRSS(), outcomes)
    }
}

enum Usage {
    /// User + system CPU seconds of this process.
    static func cpuSeconds(_ who: Int32 = RUSAGE_SELF.rawValue) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Starts peak RSS over from the current RSS (Linux: "5" into /proc/self/clear_refs), so a
    /// later ``peakRSS()`` covers only what came after. Returns false where that is not possible.
    @discardableResult
    static func resetPeakRSS() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }

    /// Resident set size of this process now, in bytes: `VmRSS` from /proc/self/status.
    static func currentRSS() -> Int { statusField("VmRSS:") ?? 0 }

    private static func statusField(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// TCP segments the machine has sent (`OutSegs` in /proc/net/snmp), or nil where that file is
    /// missing. On loopback with client and server on this machine, the difference over a run
    /// counts both directions.
    static func tcpSegmentsSent() -> Int? {
        guard let snmp = try? String(contentsOfFile: "/proc/net/snmp", encoding: .utf8) else { return nil }
        let lines = snmp.split(separator: "\n").filter { $0.hasPrefix("Tcp:") }.map { $0.split(separator: " ") }
        guard lines.count == 2, let column = lines[0].firstIndex(of: "OutSegs"), column < lines[1].count else {
            return nil
        }
        return Int(lines[1][column])
    }

    /// Peak resident set size of this process, in bytes: `VmHWM` from /proc/self/status.
    /// (`getrusage`'s `ru_maxrss` survives `execve`, so under `swift run` it would report the
    /// driver's peak instead of the benchmark's.)
    static func peakRSS() -> Int {
        if let peak = statusField("VmHWM:") { return peak }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }
}

enum Format {
    static func rate(_ value: Double) -> String { String(format: "%.0f", value) }
    static func seconds(_ value: Double) -> String { String(format: "%.2f", value) }
    static func ratio(_ value: Double) -> String { String(format: "%.2f", value) }
    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
    static func milliseconds(_ seconds: Double) -> String { String(format: "%.3f ms", seconds * 1000) }

    static func table(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 10
        var lines = [
            "| " + "measure".padding(toLength: width, withPad: " ", startingAt: 0) + " | value |",
            "|" + String(repeating: "-", count: width + 2) + "|-------|",
        ]
        for (name, value) in rows {
            lines.append("| " + name.padding(toLength: width, withPad: " ", startingAt: 0) + " | \(value) |")
        }
        return lines.joined(separator: "\n")
    }
}

/// The resident memory an idle connector costs: a connector is made, sends one push (so its
/// connection is open) and idles; the difference of the process's RSS is its cost. The first
/// connector of a process also pays for libcurl's and OpenSSL's global set-up, so a second is made
/// the same way.
enum IdleMemory {
    static func measure(
        key: MockCertificateAuthority.SigningKey, server: MockServerProcess
    ) async throws -> (first: Int, second: Int) {
        var transport = TransportConfiguration()
        transport.trustedCertificateAuthority = .file(path: server.caPath)
        func connector() throws -> TokenConnector {
            try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
                environment: .custom(host: "127.0.0.1", port: server.port), transport: transport)
        }
        let notification = Workload.notification()
        func settle() async throws -> Int {
            try await Task.sleep(for: .milliseconds(300))
            return Usage.currentRSS()
        }
        let before = try await settle()
        let first = try connector()
        _ = try await send(notification, via: first, to: Workload.device(0))
        let afterFirst = try await settle()
        let second = try connector()
        _ = try await send(notification, via: second, to: Workload.device(1))
        let afterSecond = try await settle()
        await first.shutdown()
        await second.shutdown()
        return (afterFirst - before, afterSecond - afterFirst)
    }
}

/// Bulk sends through pools of N connections (`maximumConnectionsPerHost`, each with `streams`
/// streams), in two alternating rounds.
enum PoolCurve {
    struct Point {
        var size: Int
        var result = Workload.Result()
        var connections = 0
    }

    static func measure(
        _ notification: AlertNotification<Workload.Game>, key: MockCertificateAuthority.SigningKey,
        server: MockServerProcess,
        sizes: [Int], pushes: Int, streams: Int
    ) async throws -> [Point] {
        var connectors: [TokenConnector] = []
        for size in sizes {
            let connector = try server.connector(key: key, streams: streams, connections: size)
            try await Workload.warmUp(notification, via: connector, inFlight: streams * size)
            connectors.append(connector)
        }
        var points = sizes.map { Point(size: $0) }
        for round in 0..<2 {
            let share = pushes / 2 + (round == 0 ? pushes % 2 : 0)
            for (index, connector) in connectors.enumerated() {
                points[index].result.add(
                    try await Workload.run(
                        notification, via: connector, devices: share, inFlight: streams * sizes[index]))
            }
        }
        for (index, connector) in connectors.enumerated() {
            points[index].connections = connector.connectionsOpened
            await connector.shutdown()
        }
        return points
    }
}
