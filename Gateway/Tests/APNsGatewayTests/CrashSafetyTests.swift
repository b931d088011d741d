import APNs
import APNsGateway
import APNsMockServer
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The built `apns-gateway` killed with SIGKILL while it sends, then restarted on the same queue
/// (SQLite file or PostgreSQL database). At least once (the default): every accepted device-send
/// reaches the mock APNs at least once, and the duplicates are bounded by what the killed process
/// had claimed. At most once: none reaches it twice, and every one either reaches it or is
/// reported `interrupted` (`delivery: unknown`), those bounded by the groups recorded as started.
/// One case at a time: each runs gateway processes and a mock APNs, and must kill them mid-run,
/// which a machine shared by several such cases at once cannot promise.
@Suite(.serialized) struct CrashSafetyTests {
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("apns-gateway")
    }

    /// Whether this machine can run a process as PID 1 of a new process namespace, as a container
    /// does (`unshare --pid --fork`, which needs root or user namespaces).
    static let canRunAsPID1: Bool = {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--pid", "--fork", "--mount-proc", "/bin/sh", "-c", "test $$ = 1"]
        process.standardOutput = Pipe()
        process.standardError = Pipe()
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// A running `apns-gateway serve` and its address.
    final class Gateway: @unchecked Sendable {
        // @unchecked: `process` is configured and started in `init` and afterwards only signalled
        // and read once it has exited (``exited``); `output` is behind its mutex.
        let process = TestProcess()
        let address: String
        /// Run as PID 1 of its own process namespace, under `unshare`.
        let asPID1: Bool
        /// What the gateway logged so far, and the waits for a line to come.
        private let output = LogOutput()
        /// Happens when the process has exited.
        private let exited = Event()
        /// Happens when the log has reached its file whole (every writer of the pipe is gone).
        private let logWritten = Event()

        init(arguments: [String], environment: [String: String] = [:], log: URL, asPID1: Bool = false) throws {
            self.asPID1 = asPID1
            let command = ["serve", "--port", "0"] + arguments
            if asPID1 {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
                process.arguments = ["--pid", "--fork", "--mount-proc", CrashSafetyTests.binary.path] + command
            } else {
                process.executableURL = CrashSafetyTests.binary
                process.arguments = command
            }
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            let out = Pipe()
            process.standardOutput = out
            // The log goes to `log` and, line by line, to the waits of ``logged(count:_:)``: a
            // test awaits what the gateway does on its own schedule instead of polling for it.
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let file = try FileHandle(forWritingTo: log)
            let errors = Pipe()
            process.standardError = errors
            process.terminationHandler = { [exited] _ in exited.signal() }
            try process.run()
            // A thread of its own reads the log until its end: blocking reads, so the end is seen
            // when the last writer goes (Foundation's `readabilityHandler` once missed it, and the
            // test waited forever), and no Swift concurrency thread waits for the gateway.
            // read(2) returns what has arrived; FileHandle's `read(upToCount:)` waits for the count.
            let reader = errors.fileHandleForReading
            Thread { [output, logWritten] in
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(reader.fileDescriptor, $0.baseAddress, $0.count) }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }  // the end (or an error: nothing more will come)
                    let chunk = Data(buffer[..<count])
                    file.write(chunk)
                    output.lines.withLock { $0.append(chunk) }.forEach { $0.resume(returning: true) }
                }
                try? file.close()
                logWritten.signal()
                output.lines.withLock { $0.finish() }.forEach { $0.resume(returning: false) }
            }.start()
            // The first line is `listening HOST:PORT`.
            var line = Data()
            while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
                line.append(byte)
            }
            address = String(decoding: line, as: UTF8.self).replacingOccurrences(of: "listening ", with: "")
        }

        /// Sends `signal` to the gateway: the process itself, or under `unshare` its child, PID 1
        /// inside (unshare forwards nothing; when its child ends, it exits with the child's status).
        func send(_ signal: Int32) {
            guard asPID1 else {
                kill(process.processIdentifier, signal)
                return
            }
            let pid = process.processIdentifier
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            for child in children.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }) {
                kill(child, signal)
            }
        }

        /// Returns true once the gateway has logged `count` lines that `matches` accepts (counting
        /// from its start), false if it stops logging first or `limit` passes.
        func logged(
            count: Int = 1, within limit: Duration = .seconds(60), _ matches: @escaping @Sendable (Substring) -> Bool
        ) async -> Bool {
            let id = UUID()
            // The limit's timer: it only ends a wait for a line a real process never writes.
            let deadline = Task { [output] in
                try await Task.sleep(for: limit)
                output.lines.withLock { $0.cancel(id) }?.resume(returning: false)
            }
            defer { deadline.cancel() }
            return await withCheckedContinuation { continuation in
                let now = output.lines.withLock {
                    $0.wait(id, count: count, matches: matches, continuation: continuation)
                }
                if let now { continuation.resume(returning: now) }
            }
        }

        /// Kills the gateway with SIGKILL; returns once it has exited and its log file is whole.
        func kill9() async {
            send(SIGKILL)
            await exited.wait()
            await logWritten.wait()  // the log file is whole for the test to read
        }

        /// Asks the gateway to shut down (SIGTERM); returns its exit status once it has exited and
        /// its log file is whole.
        func terminate() async -> Int32 {
            send(SIGTERM)
            await exited.wait()
            await logWritten.wait()
            return process.terminationStatus
        }
    }

    /// Something that happens once, awaited without holding a thread.
    final class Event: Sendable {
        private let state = Mutex<(happened: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func signal() {
            let waiters = state.withLock { state in
                state.happened = true
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }

        func wait() async {
            await withCheckedContinuation { continuation in
                let happened = state.withLock { state in
                    if !state.happened { state.waiters.append(continuation) }
                    return state.happened
                }
                if happened { continuation.resume() }
            }
        }
    }

    /// A gateway's log, shared with the thread that reads it.
    final class LogOutput: Sendable {
        let lines = Mutex(LogLines())
    }

    /// The lines a gateway logged and the tests waiting for some of them.
    struct LogLines {
        struct Wait {
            let count: Int
            let matches: @Sendable (Substring) -> Bool
            let continuation: CheckedContinuation<Bool, Never>
        }
        private var partial = ""
        private var complete: [String] = []
        private var waits: [UUID: Wait] = [:]
        private var finished = false

        /// A chunk of the log; the waits it completes, to resume with true.
        mutating func append(_ chunk: Data) -> [CheckedContinuation<Bool, Never>] {
            partial += String(decoding: chunk, as: UTF8.self)
            while let newline = partial.firstIndex(of: "\n") {
                complete.append(String(partial[..<newline]))
                partial = String(partial[partial.index(after: newline)...])
            }
            let done = waits.filter { isMet($0.value) }
            for id in done.keys { waits[id] = nil }
            return done.values.map(\.continuation)
        }

        /// The log ended: every wait left, to resume with false.
        mutating func finish() -> [CheckedContinuation<Bool, Never>] {
            finished = true
            defer { waits = [:] }
            return waits.values.map(\.continuation)
        }

        /// Registers a wait; returns its answer at once when there is one.
        mutating func wait(
            _ id: UUID, count: Int, matches: @escaping @Sendable (Substring) -> Bool,
            continuation: CheckedContinuation<Bool, Never>
        ) -> Bool? {
            let wait = Wait(count: count, matches: matches, continuation: continuation)
            if isMet(wait) { return true }
            if finished { return false }
            waits[id] = wait
            return nil
        }

        mutating func cancel(_ id: UUID) -> CheckedContinuation<Bool, Never>? {
            waits.removeValue(forKey: id)?.continuation
        }

        private func isMet(_ wait: Wait) -> Bool { complete.count { wait.matches($0[...]) } >= wait.count }
    }

    static func post(_ body: String, to address: String, key: String) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://\(address)/v1/notifications")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(body.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// A mock APNs answering each request 50 ms late on `streams` streams (slow enough to kill a
    /// gateway mid-way), and a folder with its signing key and CA for the gateway's options.
    struct Peer {
        let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server: MockAPNsServer
        let folder: URL
        let keyFile: URL
        let caFile: URL

        init(streams: Int) async throws {
            var configuration = MockAPNsServer.Configuration(signingKeys: [signingKey])
            configuration.strict = true
            configuration.minimumTokenUpdateInterval = nil  // two processes, each mints its own token
            configuration.maximumConcurrentStreams = streams
            server = try await MockAPNsServer.start(configuration)
            server.inject(.delay(.milliseconds(50)))
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-crash-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            keyFile = folder.appendingPathComponent("AuthKey.p8")
            try signingKey.privateKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
            caFile = folder.appendingPathComponent("ca.pem")
            try server.certificateAuthorityPEM.write(to: caFile, atomically: true, encoding: .utf8)
        }

        /// The options that point a gateway at this peer with this key.
        var arguments: [String] {
            [
                "--apns-host", "\(server.host):\(server.port)", "--ca-file", caFile.path, "--key-file", keyFile.path,
                "--key-id", signingKey.keyID, "--team-id", signingKey.teamID,
                // The pace the kill relies on: a loaded machine can make the streams cycle slowly,
                // and a connection added then would double it.
                "--additional-connections-when-slow", "0",
            ]
        }
    }

    /// Both delivery settings in one run: notifications of each, interleaved, so that the kill
    /// finds device-sends of both in flight.
    @Test(arguments: Backend.allCases)
    func killedWhileSendingThenRestarted(_ backend: Backend) async throws {
        // About 1,000 pushes a second with the delay: time to kill mid-way.
        let peer = try await Peer(streams: 50)
        let (server, folder, signingKey) = (peer.server, peer.folder, peer.signingKey)
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = try await TestStore(backend)
        let store = queue.store
        var database = queue.url
        // A password in the PostgreSQL URL (the test cluster's trust authentication never asks for
        // it) must not reach the logs either.
        var databasePassword: String?
        if backend == .postgres, var components = URLComponents(string: database) {
            let password = "pw-\(UUID().uuidString)"
            components.password = password
            if let withPassword = components.string {
                database = withPassword
                databasePassword = password
            }
        }
        let apiKey = GatewayAPI.makeAPIKey()
        try await store.addAPIKey(
            APIKey(
                name: "crash", hash: GatewayAPI.hash(apiKey: apiKey), apps: ["com.example.app"], requestsPerSecond: 100)
        )
        let arguments =
            ["--database", database] + peer.arguments + ["--instance", "crash-test", "--log-level", "trace"]

        let first = try Gateway(arguments: arguments, log: folder.appendingPathComponent("first.log"))
        // Six notifications of 1,000 devices, at most once and at least once in turn. The gateway
        // sends them one after the other, so each kill below is timed to find one of each setting
        // part sent: outcomes written, sends in flight, device-sends claimed and unsent, and more
        // not yet claimed.
        let tokens = (0..<6_000).map { String(format: "%064x", $0 + 1) }
        let deliveries = [
            "at-most-once", "at-least-once", "at-most-once", "at-least-once", "at-most-once", "at-least-once",
        ]
        let atMostOnce = Set(
            deliveries.indices.filter { deliveries[$0] == "at-most-once" }.flatMap {
                tokens[($0 * 1_000)..<(($0 + 1) * 1_000)]
            })
        for (index, delivery) in deliveries.enumerated() {
            let part = tokens[(index * 1_000)..<((index + 1) * 1_000)]
            let body =
                #"{"push-type":"alert","bundle-id":"com.example.app","delivery":"\#(delivery)","alert":"Hi","devices":[\#(part.map { "\"\($0)\"" }.joined(separator: ","))]}"#
            #expect(try await Self.post(body, to: first.address, key: apiKey) == 202)
        }
        /// Kills `gateway` with SIGKILL once a notification of the setting is part sent (300 of its
        /// 1,000 devices answered, or at once if it is already between 300 and 700), or after
        /// 90 s; the queue must still hold work.
        func kill(_ gateway: Gateway, amidst delivery: String) async throws -> (sent: Int, depth: Int) {
            let ofTheSetting: @Sendable (RecordedRequest) -> Bool = {
                atMostOnce.contains(String($0.path.dropFirst("/3/device/".count))) == (delivery == "at-most-once")
            }
            let sent = server.requests.count(where: ofTheSetting)
            let started = sent - sent % 1_000
            let target = sent % 1_000 <= 700 ? max(sent, started + 300) : started + 1_300
            _ = await server.requests(count: target, within: .seconds(90), where: ofTheSetting)
            await gateway.kill9()
            let killed = (server.requests.count, try await store.queueDepth())
            // Mid-run (on a very busy machine the 90 s may pass first).
            #expect(killed.1 > 0, "the kill came after everything was sent: the test proves nothing")
            return killed
        }
        // The first process dies amid an at-most-once notification, the second, which takes its
        // claims back, amid an at-least-once one; the third finishes.
        let (sentBeforeKill, depthAtKill) = try await kill(first, amidst: "at-most-once")
        #expect(sentBeforeKill >= 300)
        let second = try Gateway(arguments: arguments, log: folder.appendingPathComponent("second.log"))
        _ = try await kill(second, amidst: "at-least-once")
        let third = try Gateway(arguments: arguments, log: folder.appendingPathComponent("third.log"))
        try await Poll.until(within: .seconds(120), every: .milliseconds(100)) { try await store.queueDepth() == 0 }
        #expect(await third.terminate() == 0, "the restarted gateway stops cleanly on SIGTERM")

        #expect(try await store.queueDepth() == 0)
        var perToken: [String: Int] = [:]
        for request in server.requests { perToken[String(request.path.dropFirst("/3/device/".count)), default: 0] += 1 }
        let duplicates = server.requests.count - perToken.count
        let duplicatesAtMostOnce = perToken.filter { atMostOnce.contains($0.key) }.values.reduce(0) { $0 + $1 - 1 }
        // Reported as interrupted (at most once): may have been sent by the killed process, not sent again.
        let interrupted = Set(
            try await queue.rows(
                "SELECT token FROM deliveries WHERE error_kind = 'interrupted' AND delivery = 'unknown'"))
        let missing = tokens.filter { perToken[$0] == nil && !interrupted.contains($0) }
        // What the queue says of each one missing, for a failure to explain itself.
        let missingRows =
            missing.isEmpty
            ? []
            : try await queue.rows(
                """
                SELECT token || ' ' || state || ' attempts=' || CAST(attempts AS TEXT) || ' status=' || coalesce(CAST(status AS TEXT), '-')
                    || ' kind=' || coalesce(error_kind, '-') || ' delivery=' || coalesce(delivery, '-')
                    || ' message=' || coalesce(message, '-')
                FROM deliveries WHERE token IN (\(missing.prefix(20).map { "'\($0)'" }.joined(separator: ",")))
                """)
        #expect(
            missing.isEmpty,
            "\(missing.count) accepted device-sends neither reached APNs nor were reported: \(missingRows)")
        // A device-send sent twice carries the same apns-id both times: recognisable.
        var idsPerToken: [String: Set<String>] = [:]
        for request in server.requests {
            idsPerToken[request.path, default: []].insert(request[header: "apns-id"] ?? "none")
        }
        #expect(idsPerToken.values.allSatisfy { $0.count == 1 && !$0.contains("none") })
        #expect(Set(idsPerToken.values.flatMap { $0 }).count == perToken.count)
        let defaults = Dispatcher.Configuration()
        // At most once: never sent twice; only the groups recorded as started and not finished are
        // reported interrupted, of each notification in each batch being sent (a batch of 2,000
        // holds two of this test's notifications), at each of the two kills.
        #expect(duplicatesAtMostOnce == 0, "\(duplicatesAtMostOnce) at-most-once device-sends sent twice")
        let bound = defaults.startGroup * defaults.startGroupsInFlight * defaults.concurrentBatches * 2 * 2
        #expect(interrupted.count <= bound, "\(interrupted.count) interrupted")
        // At least once: never reported interrupted; only what a killed process had claimed and not
        // yet written back can be sent twice, at each kill.
        #expect(interrupted.isSubset(of: atMostOnce), "an at-least-once device-send was reported interrupted")
        #expect(duplicates <= 2 * defaults.claimBatch, "\(duplicates) duplicates")
        // Every log line, at trace level, of the three processes: no API key, no signing key, no JWT, no
        // database password.
        let logs = try ["first.log", "second.log", "third.log"].map {
            try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)
        }.joined()
        #expect(logs.contains("APNs provider token minted"), "the logs were read")
        #expect(!logs.contains(apiKey))
        let keyLines = signingKey.privateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        #expect(keyLines.allSatisfy { !logs.contains($0) })
        #expect(!logs.lowercased().contains("bearer ey"))
        if let databasePassword { #expect(!logs.contains(databasePassword)) }
        print(
            "crash safety (\(backend)): \(sentBeforeKill) sent before SIGKILL (queue depth \(depthAtKill)), \(duplicates) sent twice after the restart, \(interrupted.count) reported interrupted (\(interrupted.filter { perToken[$0] == nil }.count) of them had not reached APNs), none lost unreported"
        )
        try await server.stop()
        await queue.remove()
    }

    /// As a container runs it: PID 1, under the same hostname at every start, so under the same
    /// default instance name, which `kill` cannot tell from the new process. Killed with SIGKILL
    /// and started again the same way, the gateway takes its claims back within a few seconds (it
    /// waits out three of the earlier start's heartbeats) instead of refusing to start while a
    /// "live" gateway holds its name (which it did, for the whole lease, before).
    @Test(.enabled(if: CrashSafetyTests.canRunAsPID1, "needs `unshare --pid --fork` (root or user namespaces)"))
    func killedAsPID1AndRestartedTheSameWayTakesItsClaimsBackAtOnce() async throws {
        let peer = try await Peer(streams: 20)
        let (server, folder) = (peer.server, peer.folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = try await TestStore(.sqlite)
        let apiKey = GatewayAPI.makeAPIKey()
        try await queue.store.addAPIKey(
            APIKey(
                name: "pid1", hash: GatewayAPI.hash(apiKey: apiKey), apps: ["com.example.app"], requestsPerSecond: 100))
        // No --instance: the default name, gateway-HOST-1 at each start.
        let arguments = ["--database", queue.url] + peer.arguments
        let first = try Gateway(arguments: arguments, log: folder.appendingPathComponent("first.log"), asPID1: true)
        let tokens = (0..<3_000).map { String(format: "%064x", $0 + 1) }
        let body =
            #"{"push-type":"alert","bundle-id":"com.example.app","alert":"Hi","devices":[\#(tokens.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        #expect(try await Self.post(body, to: first.address, key: apiKey) == 202)
        _ = await server.requests(count: 300, within: .seconds(60))
        await first.kill9()
        let claimed = try await queue.rows("SELECT token FROM deliveries WHERE state = 'claimed'").count
        #expect(claimed > 0, "the kill left no claims behind: the test proves nothing")
        let sentBeforeRestart = server.requests.count

        let restartedAt = ContinuousClock.now
        let second = try Gateway(arguments: arguments, log: folder.appendingPathComponent("second.log"), asPID1: true)
        // Its claims are sent again within a few seconds, not after the lease (120 s). (The mock
        // records a request when it answers: the killed process's last ones, in flight on its 20
        // streams, may still come in.)
        _ = await server.requests(count: sentBeforeRestart + 21, within: .seconds(60))
        let resumedAfter = ContinuousClock.now - restartedAt
        #expect(resumedAfter < .seconds(15), "sending again took \(resumedAfter)")
        try await Poll.until(within: .seconds(120), every: .milliseconds(100)) {
            try await queue.store.queueDepth() == 0
        }
        #expect(try await queue.store.queueDepth() == 0)
        #expect(await second.terminate() == 0, "the restarted gateway ran, and stops cleanly on SIGTERM")
        let logs = try ["first.log", "second.log"].map {
            try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)
        }
        let name = "gateway-\(ProcessInfo.processInfo.hostName)-1"
        #expect(logs.allSatisfy { $0.contains("instance=\(name)") }, "both starts were PID 1 under one name")
        #expect(logs[1].contains("queued again what stopped instances held"), "\(logs[1].suffix(2_000))")
        #expect(!logs[1].contains("another live gateway holds the instance name"))
        var perToken: [String: Int] = [:]
        for request in server.requests { perToken[request.path, default: 0] += 1 }
        #expect(perToken.count == tokens.count, "every device-send reached APNs")
        print("PID 1 restart: claims sent again \(resumedAfter) after the restart (\(claimed) were held)")
        try await server.stop()
        await queue.remove()
    }
}
