@_spi(Benchmarks) import APNs
import APNsMockServer
import ArgumentParser
import Foundation

/// Sends many notifications through faults and checks every outcome against what the server
/// processed. Not a test: a run takes minutes and prints its figures.
///
///     swift run -c release APNsSoak                 # 1,000,000 sends, a fault every 10,000
///     swift run APNsSoak --count 20000             # a short run
///     swift run -c release APNsSoak --duration 3600   # an hour, RSS every minute
///     swift run -c release APNsSoak --duration 3600 --memory-trim 10   # the transport hands freed memory back every 10 s
///
/// Each wave of `--wave` sends (500 in flight, each with its own apns-id) starts with one fault
/// injected into the mock server and a graceful GOAWAY on its open connections (so the client's
/// next connection gets the fault), in turn: reset or close after processing, a connection that
/// never answers (from the start, or after 100 answers), streams reset after processing, refused streams, GOAWAY with a lower
/// last-stream-id, 503 with Retry-After, slow answers. Counted per wave, then forgotten, except the
/// sends that ended `unknown` unprocessed: the server may still process those once, later (any other
/// send it processes after its wave was counted fails the run). The mock runs in a child process
/// (`--server process`, the default), so the RSS curve is the client's.
@main
struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "APNsSoak", abstract: "swift-apns through a million sends and a hundred faults.")

    @Option(help: "Sends in all (ignored with --duration).") var count = 1_000_000
    @Option(help: "Run for this many seconds instead of --count sends, whole waves at a time (3600: an hour).")
    var duration: Double?
    @Option(name: .customLong("sample-every"), help: "Seconds between two RSS samples of the curve.") var sampleEvery =
        60.0
    @Option(help: "Sends per wave; one fault is injected at the start of each.") var wave = 10_000
    @Option(help: "Sends in flight.") var inFlight = 500
    @Option(help: "Each send's timeout, in seconds.") var timeout = 2.0
    @Option(
        help:
            "faults (the default), churn (no fault, a new connection each wave) or none (no fault, one connection): the last two are baselines."
    )
    var mode = "faults"
    @Option(name: .customLong("only-fault"), help: "Inject only the fault with this index (0–8) in every wave.")
    var onlyFault: Int?
    @Option(
        help:
            "Where the mock APNs runs: process (a child process, the default: RSS is the client's alone) or in-process (its memory counts too)."
    )
    var server = "process"
    @Flag(help: .hidden) var serve = false
    @Option(
        name: .customLong("memory-trim"),
        help:
            "The transport's memoryTrimInterval, in seconds: it hands the process's freed heap memory back to the system (glibc's malloc_trim) this often."
    )
    var memoryTrim: Double?

    static let faults: [(MockAPNsServer.Fault, connections: Int?, requests: Int?)] = [
        (.resetAfterProcessing(requests: 50), 1, nil),
        (.closeAfterProcessing(requests: 50), 1, nil),
        (.neverAnswer, 1, nil),
        (.neverAnswerAfter(requests: 100), 1, nil),
        (.resetStreamsAfterProcessing(errorCode: 2), nil, 20),
        (.resetStreams(errorCode: 7), 1, nil),
        (.goAway(afterRequests: 200, errorCode: 0, debugData: #"{"reason":"Shutdown"}"#, lowerBy: 20), 1, nil),
        (.respond(status: 503, retryAfter: 1, body: #"{"reason":"ServiceUnavailable"}"#), nil, 50),
        (.delay(.milliseconds(100)), nil, 200),
    ]

    struct Tally {
        var accepted = 0, rejected = 0, notSent = 0, unknown = 0
        var duplicates = 0
        /// Outcomes that contradict what the server processed (must stay 0).
        var untruthful = 0
        /// Sends the server processed after their wave was counted: once, after ending `unknown`
        /// unprocessed (truthful: it may have been delivered), or otherwise (must stay 0: a duplicate,
        /// or an outcome that said it was not sent or already counted it).
        var lateButTruthful = 0, lateContradicting = 0
        var latencies = Histogram()
    }

    /// Latencies in buckets 1 % wide (from 1 µs to beyond an hour): fixed memory for any run.
    struct Histogram {
        private var counts = [Int](repeating: 0, count: 2_400)
        private(set) var total = 0
        private(set) var maximum = 0.0
        private static let base = log(1.01)

        mutating func record(_ seconds: Double) {
            let micros = max(1, seconds * 1e6)
            counts[min(counts.count - 1, Int(log(micros) / Histogram.base))] += 1
            total += 1
            maximum = max(maximum, seconds)
        }

        /// The upper edge of the bucket holding the `p` quantile, in seconds.
        func quantile(_ p: Double) -> Double {
            let rank = Int((Double(total) * p).rounded(.up))
            var seen = 0
            for (index, count) in counts.enumerated() {
                seen += count
                if seen >= max(1, rank) { return exp(Double(index + 1) * Histogram.base) / 1e6 }
            }
            return maximum
        }
    }

    func run() async throws {
        if serve { return try await SoakServer.serve() }
        guard server == "process" || server == "in-process" else {
            throw ValidationError("--server is process or in-process")
        }
        guard (1...65_536).contains(wave) else {
            throw ValidationError("--wave is 1 to 65,536 (a send's index in its wave is two bytes of its apns-id)")
        }
        if let memoryTrim, !(memoryTrim.isFinite && (1...86_400).contains(memoryTrim)) {
            throw ValidationError("--memory-trim \(memoryTrim) is 1 to 86,400 seconds (the transport's range)")
        }
        let server = try await self.server == "process" ? SoakServer.startProcess() : SoakServer.startInProcess()
        let key = server.key
        var transport = TransportConfiguration(
            trustedCertificateAuthority: .pem(server.certificateAuthorityPEM), maximumConcurrentStreams: inFlight)
        transport.memoryTrimInterval = memoryTrim.map { Duration.seconds($0) }
        let connector = try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: server.host, port: server.port), transport: transport)
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        let timeout = Duration.milliseconds(Int64(self.timeout * 1000))
        // Warm up: connect and settle the token before measuring memory.
        _ = try await send(
            AlertNotification(bundleID: "com.example.app") { Alert("warm-up") }, via: connector, to: device)
        let startRSS = Self.residentMegabytes()
        let started = ContinuousClock.now
        var tally = Tally()
        var inDoubt = StillInDoubt()
        var sent = 0
        var waveIndex = 0
        // The RSS curve: (seconds since the start, MB), one sample every `sampleEvery` seconds.
        var curve: [(Double, Int)] = [(0, startRSS)]
        func more() -> Bool {
            if let duration { return (ContinuousClock.now - started).seconds < duration }
            return sent < self.count
        }
        while more() {
            let size = duration == nil ? min(wave, self.count - sent) : wave
            if mode == "faults" { try await server.inject(faultIndex: (onlyFault ?? waveIndex) % Self.faults.count) }
            // The client moves to a new connection, which gets the fault.
            if mode != "none" { try await server.goAwayAll() }
            var latencies = [Double](repeating: 0, count: size)
            let outcomes = await Self.sendWave(
                wave: waveIndex, size: size, via: connector, to: device, inFlight: inFlight, timeout: timeout,
                latencies: &latencies)
            try await server.inject(faultIndex: nil)
            let processed = try await server.takeProcessedCounts(wave: waveIndex, size: size)
            // A send of an earlier wave processed since: fine once for one that ended `unknown`
            // unprocessed (it may have been delivered, late), a duplicate or a contradiction otherwise.
            for late in processed.late {
                if inDoubt.settle(wave: late.wave, index: late.index), late.times == 1 {
                    tally.lateButTruthful += 1
                } else {
                    tally.lateContradicting += 1
                }
            }
            inDoubt.forget(before: waveIndex)
            for index in 0..<size {
                let times = Int(processed.times[index])
                if times > 1 { tally.duplicates += 1 }
                tally.latencies.record(latencies[index])
                switch outcomes[index] {
                case .accepted:
                    tally.accepted += 1
                    if times != 1 { tally.untruthful += 1 }
                case .rejected:
                    tally.rejected += 1
                    if times != 0 { tally.untruthful += 1 }
                case .notSent:
                    tally.notSent += 1
                    if times != 0 { tally.untruthful += 1 }
                case .unknown:
                    tally.unknown += 1
                    if times == 0 { inDoubt.add(wave: waveIndex, index: index) }
                case .lost:
                    break  // no outcome: the count of outcomes below comes up short and the run fails
                }
            }
            sent += size
            waveIndex += 1
            let now = (ContinuousClock.now - started).seconds
            if let last = curve.last, now - last.0 >= sampleEvery {
                let resident = Self.residentMegabytes()
                curve.append((now, resident))
                print(
                    String(
                        format: "curve %6.0f s  %d MB  (%d sent, %d easy handles)  %@", now, resident, sent,
                        connector.easyHandleCount, Self.memoryBreakdown()))
            }
            if waveIndex % 10 == 0 {
                print(
                    "\(sent) sent, \(Int(Double(sent) / (ContinuousClock.now - started).seconds))/s, RSS \(Self.residentMegabytes()) MB"
                )
            }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let endRSS = Self.residentMegabytes()
        let count = sent
        // After the first five minutes (the pools and caches' warm-up), how far RSS moved.
        let settled = curve.filter { $0.0 >= 300 }.map(\.1) + [endRSS]
        // The band every sample stayed in (a sample below the first counts too).
        let drift = (settled.max() ?? endRSS) - (settled.min() ?? endRSS)
        let rows: [(String, String)] = [
            ("sends", "\(count) in waves of \(wave), \(inFlight) in flight, timeout \(self.timeout) s"),
            (
                "faults injected",
                mode == "faults" ? "\(waveIndex) (one per wave, \(Self.faults.count) kinds in turn)" : "none (\(mode))"
            ),
            ("outcomes", "\(tally.accepted + tally.rejected + tally.notSent + tally.unknown) of \(count)"),
            ("accepted", "\(tally.accepted)"),
            ("rejected (503 with Retry-After)", "\(tally.rejected)"),
            ("failed, not sent", "\(tally.notSent)"),
            ("failed, may have been delivered", "\(tally.unknown)"),
            ("server-side duplicates", "\(tally.duplicates)"),
            ("outcomes contradicting the server", "\(tally.untruthful)"),
            (
                "processed after their wave's count",
                "\(tally.lateContradicting) repeating or contradicting an outcome, \(tally.lateButTruthful) that ended unknown"
            ),
            ("connections opened", "\(connector.connectionsOpened)"),
            ("stalled connections replaced", "\(connector.stalledConnectionsClosed)"),
            (
                "latency p50 / p99 / max",
                String(
                    format: "%.1f / %.1f / %.1f ms", tally.latencies.quantile(0.5) * 1000,
                    tally.latencies.quantile(0.99) * 1000, tally.latencies.maximum * 1000)
            ),
            ("throughput", String(format: "%.0f sends/s over %.0f s", Double(count) / elapsed, elapsed)),
            (
                "mock server",
                self.server == "process" ? "a child process (RSS is the client's)" : "in this process (RSS includes it)"
            ),
            ("libcurl", Self.libcurlVersion()),
            ("RSS start / end", "\(startRSS) / \(endRSS) MB"),
            (
                "RSS after 5 min: first / min / max / end",
                elapsed >= 300
                    ? "\(settled.first ?? 0) / \(settled.min() ?? 0) / \(settled.max() ?? 0) / \(endRSS) MB (range \(drift) MB)"
                    : "run shorter than 5 min"
            ),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        for (name, value) in rows { print(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value) }
        await connector.shutdown()
        try await server.stop()
        if tally.duplicates > 0 || tally.untruthful > 0 || tally.lateContradicting > 0
            || tally.accepted + tally.rejected + tally.notSent + tally.unknown != count
        {
            throw ExitCode(1)
        }
    }

    /// What a send ended in, as the soak counts it: one byte per send, so a wave's bookkeeping
    /// stays small (about 90 KB for 10,000 sends, outcomes and latencies) and does not itself
    /// swell the allocator's arenas that the RSS curve watches.
    enum Outcome: UInt8 { case lost, accepted, rejected, notSent, unknown }

    /// The apns-id of send `index` (below 65,536) of wave `wave`: the wave in its first four bytes
    /// and the index in the next two, so the server can report how often it processed each send
    /// by position (``position(of:)``) and neither side keeps a table of ids.
    static func apnsID(wave: Int, index: Int) -> APNsID {
        let w = UInt32(truncatingIfNeeded: wave), i = UInt16(truncatingIfNeeded: index)
        func byte<T: FixedWidthInteger>(_ value: T, _ shift: Int) -> UInt8 { UInt8(truncatingIfNeeded: value >> shift) }
        return APNsID(
            UUID(
                uuid: (
                    byte(w, 24), byte(w, 16), byte(w, 8), byte(w, 0), byte(i, 8), byte(i, 0), 0x40, 0, 0x80, 0, 0, 0, 0,
                    0, 0, 0
                )))
    }

    /// The wave and index an apns-id made by ``apnsID(wave:index:)`` stands for (nil for any other id).
    static func position(of apnsID: String) -> (wave: Int, index: Int)? {
        guard let uuid = UUID(uuidString: apnsID)?.uuid, uuid.6 == 0x40, uuid.8 == 0x80,
            uuid.7 | uuid.9 | uuid.10 | uuid.11 | uuid.12 | uuid.13 | uuid.14 | uuid.15 == 0
        else { return nil }
        let wave = Int(uuid.0) << 24 | Int(uuid.1) << 16 | Int(uuid.2) << 8 | Int(uuid.3)
        return (wave, Int(uuid.4) << 8 | Int(uuid.5))
    }

    /// What the server processed since the last count: how often each send of wave `wave`, by index
    /// (capped at 9), and any send of an earlier wave it processed after that wave was counted.
    struct Processed {
        var times: [UInt8]
        /// Sends of earlier waves processed since their wave's count: (wave, index, times).
        var late: [Late] = []

        struct Late: Equatable {
            let wave: Int, index: Int, times: Int
        }

        /// The child's answer: one digit per send, then ` wave:index:times` for each late one.
        var line: String {
            String(decoding: times.map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
                + late.map { " \($0.wave):\($0.index):\($0.times)" }.joined()
        }

        init(times: [UInt8], late: [Late] = []) {
            self.times = times
            self.late = late
        }

        /// Reads ``line``; nil unless it holds exactly `size` digits and well-formed late entries.
        init?(line: String, size: Int) {
            var words = line.split(separator: " ")[...]
            guard let digits = words.popFirst()?.utf8, digits.count == size,
                digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else { return nil }
            times = digits.map { $0 - UInt8(ascii: "0") }
            for word in words {
                let parts = word.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                late.append(Late(wave: parts[0], index: parts[1], times: parts[2]))
            }
        }
    }

    /// ``Processed`` from the server's counts by apns-id since the last count.
    static func processed(_ counts: [String: Int], wave: Int, size: Int) -> Processed {
        var result = Processed(times: [UInt8](repeating: 0, count: size))
        for (id, count) in counts {
            guard let position = position(of: id) else { continue }
            if position.wave == wave, position.index < size {
                result.times[position.index] = UInt8(min(9, count))
            } else {
                result.late.append(.init(wave: position.wave, index: position.index, times: count))
            }
        }
        return result
    }

    /// The sends of the last few waves that ended `unknown` and that the server had not processed
    /// when their wave was counted: the only ones it may still process without a duplicate or a
    /// contradiction. Kept for ``window`` waves, so the soak's own memory stays flat.
    struct StillInDoubt {
        static let window = 4
        private var byWave: [Int: Set<Int>] = [:]

        mutating func add(wave: Int, index: Int) { byWave[wave, default: []].insert(index) }

        /// Whether that send was still in doubt (it is not any more).
        mutating func settle(wave: Int, index: Int) -> Bool { byWave[wave]?.remove(index) != nil }

        mutating func forget(before wave: Int) { byWave = byWave.filter { $0.key >= wave - Self.window } }
    }

    /// Sends one notification for each index of wave `wave`, `inFlight` at a time; each outcome by
    /// index, each latency into `latencies`.
    static func sendWave(
        wave: Int, size: Int, via connector: TokenConnector, to device: Device, inFlight: Int, timeout: Duration,
        latencies: inout [Double]
    ) async -> [Outcome] {
        await withTaskGroup(of: (Int, Outcome, Double).self) { group in
            var outcomes = [Outcome](repeating: .lost, count: size)
            var next = 0
            func start() {
                let index = next
                next += 1
                group.addTask {
                    let notification = AlertNotification(
                        bundleID: "com.example.app", apnsID: apnsID(wave: wave, index: index)
                    ) { Alert("soak \(index)") }
                    let begin = ContinuousClock.now
                    do throws(APNsError) {
                        _ = try await send(notification, via: connector, to: device, timeout: timeout)
                        return (index, .accepted, (ContinuousClock.now - begin).seconds)
                    } catch {
                        let outcome: Outcome
                        switch error {
                        case .rejected: outcome = .rejected
                        case .transport(let failure) where failure.delivery == .notSent: outcome = .notSent
                        default: outcome = .unknown
                        }
                        return (index, outcome, (ContinuousClock.now - begin).seconds)
                    }
                }
            }
            while next < min(inFlight, size) { start() }
            for await (index, outcome, latency) in group {
                outcomes[index] = outcome
                latencies[index] = latency
                if next < size { start() }
            }
            return outcomes
        }
    }

    /// A C function of the process's loaded libraries, looked up at run time (`dlsym` with
    /// `RTLD_DEFAULT`): for functions Swift's C modules do not import (glibc's `malloc_info`), and
    /// for the libcurl `LD_LIBRARY_PATH` put in place of the one the build linked.
    static func cFunction<Function>(named name: String, as type: Function.Type) -> Function? {
        #if canImport(Darwin)
            let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #else
            let everywhere = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT
        #endif
        return dlsym(everywhere, name).map { unsafeBitCast($0, to: type) }
    }

    /// The libcurl this process loaded (`curl_version()`).
    static func libcurlVersion() -> String {
        let version = cFunction(named: "curl_version", as: (@convention(c) () -> UnsafePointer<CChar>?).self)
        return version?().map { String(cString: $0) } ?? "?"
    }

    /// Where the resident memory is, printed with each point of the curve: the process's mappings by kind (from
    /// `/proc/self/smaps`: the main heap, anonymous mappings — other malloc arenas, thread stacks,
    /// large allocations — and files), the malloc arenas' bytes in use and free (glibc's
    /// `malloc_info`), and the threads by name (`/proc/self/task/*/comm`). Linux only; empty elsewhere.
    static func memoryBreakdown() -> String {
        #if os(Linux)
            var kinds: [String: Int] = [:]
            var kind = "anon"
            // Read to the end: procfs files report size 0, so a reader that trusts the size stops early.
            if let smaps = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/smaps")).readToEnd().map({
                String(decoding: $0, as: UTF8.self)
            }) {
                for line in smaps.split(separator: "\n") {
                    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                    if let first = fields.first, first.contains("-"), first.first?.isHexDigit == true {
                        let path = fields.count >= 6 ? String(fields[5]) : ""
                        kind =
                            path.isEmpty
                            ? "anon"
                            : path.hasPrefix("/")
                                ? "file" : path == "[heap]" ? "heap" : path.hasPrefix("[stack") ? "stack" : "other"
                    } else if fields.first == "Rss:", fields.count >= 2 {
                        kinds[kind, default: 0] += Int(fields[1]) ?? 0
                    }
                }
            }
            var malloc = ""
            if let mallocInfo = cFunction(
                named: "malloc_info", as: (@convention(c) (Int32, UnsafeMutablePointer<FILE>) -> Int32).self)
            {
                var buffer: UnsafeMutablePointer<CChar>?
                var size = 0
                if let stream = open_memstream(&buffer, &size) {
                    _ = mallocInfo(0, stream)
                    fclose(stream)
                    if let buffer {
                        let xml = String(cString: buffer)
                        free(buffer)
                        let arenas = xml.components(separatedBy: "<heap nr=").count - 1
                        let free = Self.sum(xml, [#"<total type="fast""#, #"<total type="rest""#])
                        let system = Self.sum(xml, [#"<system type="current""#])
                        let mapped = Self.sum(xml, [#"<total type="mmap""#])
                        // Each arena's in use / free (MB), in glibc's order: arena 0 is the main
                        // thread's, the others go to threads as they first allocate.
                        let perArena = xml.components(separatedBy: "<heap nr=").dropFirst().map { part in
                            let heap = part.components(separatedBy: "</heap>").first ?? part
                            let free = Self.sum(heap, [#"<total type="fast""#, #"<total type="rest""#])
                            let system = Self.sum(heap, [#"<system type="current""#])
                            return String(
                                format: "%.1f/%.1f", Double(system - free) / 1_048_576, Double(free) / 1_048_576)
                        }
                        malloc = String(
                            format:
                                " malloc: %d arenas, %.1f MB in use, %.1f MB free, %.1f MB mmapped (by arena, in use/free: %@);",
                            arenas,
                            Double(system - free) / 1_048_576, Double(free) / 1_048_576, Double(mapped) / 1_048_576,
                            perArena.joined(separator: " "))
                    }
                }
            }
            // Which threads: a step in RSS that comes with a new thread is a new malloc arena.
            var names: [String: Int] = [:]
            for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
                let name =
                    (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                names[name, default: 0] += 1
            }
            let threads = names.values.reduce(0, +)
            let named = names.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
            func mb(_ key: String) -> String { String(format: "%.1f", Double(kinds[key] ?? 0) / 1024) }
            return
                "[rss heap \(mb("heap")) anon \(mb("anon")) file \(mb("file")) stack \(mb("stack")) MB;\(malloc) \(threads) threads: \(named)]"
        #else
            return ""
        #endif
    }

    /// The sum of the `size` of the last element starting with each prefix in `malloc_info`'s XML
    /// (the process-wide totals come last).
    static func sum(_ xml: String, _ prefixes: [String]) -> Int {
        prefixes.reduce(0) { result, prefix in
            guard let range = xml.range(of: prefix, options: .backwards) else { return result }
            let rest = xml[range.upperBound...]
            guard let size = rest.range(of: #"size=""#) else { return result }
            return result + (Int(rest[size.upperBound...].prefix(while: \.isNumber)) ?? 0)
        }
    }

    static func residentMegabytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
}
