import APNs
import APNsMockServer
import CLibcurlReference
import Foundation

/// The mock server in its own process: this executable re-run with `--serve`, or one already
/// running (`--external-server`, for valgrind, under which a child process cannot be spawned).
struct MockServerProcess {
    let process: Process?
    let port: Int
    let caPath: String
    /// What ``stop()`` sends: SIGKILL for the mock (see there); nginx's master needs SIGTERM to
    /// take its worker with it.
    var stopSignal = SIGKILL
    /// Files and folders made for this server, removed by ``stop()``.
    var leftovers: [String] = []

    /// Starts the child; with `delayMilliseconds`, it answers each request that long after it arrived
    /// (a round trip to a server far away).
    static func launch(
        key: MockCertificateAuthority.SigningKey, threads: Int, delayMilliseconds: Int = 0
    ) throws -> MockServerProcess {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apns-bench-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let keyFile = folder.appendingPathComponent("key.json")
        try writeKey(key, to: keyFile.path)
        var server = try child(
            [
                "--serve", "--key-file", keyFile.path, "--server-threads", String(threads),
                "--serve-delay", String(delayMilliseconds),
            ], what: "the mock server")
        server.leftovers = [folder.path]  // the key and the CA the child wrote beside it
        return server
    }

    /// This executable re-run with `arguments` as a server: its first line is `port <n> ca <path>`.
    static func child(_ arguments: [String], what: String) throws -> MockServerProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let parts = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard parts.count == 4, let port = Int(parts[1]) else {
            process.terminate()
            throw BenchmarkError("\(what) process did not start: \(String(decoding: line, as: UTF8.self))")
        }
        return MockServerProcess(process: process, port: port, caPath: String(parts[3]))
    }

    /// A token connector to this server that trusts its CA: `connections` × `streams` in flight,
    /// and a request timeout no benchmark reaches.
    func connector(
        key: MockCertificateAuthority.SigningKey, streams: Int, connections: Int = 1,
        streamIdle: StreamIdleHistogram? = nil, additional: Int = 0
    ) throws -> TokenConnector {
        var transport = transport(streams: streams, connections: connections)
        transport.streamIdle = streamIdle
        transport.additionalConnectionsWhenSlow = additional
        return try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: port), transport: transport)
    }

    /// The transport settings of ``connector(key:streams:connections:streamIdle:additional:)``: a
    /// pool of `connections`, never more (a row measures the pool it names).
    func transport(streams: Int, connections: Int = 1) -> TransportConfiguration {
        var transport = TransportConfiguration()
        transport.additionalConnectionsWhenSlow = 0
        transport.trustedCertificateAuthority = .file(path: caPath)
        transport.maximumConcurrentStreams = streams
        transport.maximumConnectionsPerHost = connections
        transport.requestTimeout = .seconds(120)
        return transport
    }

    /// A server started with `--serve --key-file keyFile` and listening on `port`.
    static func attach(port: Int, keyFile: String) -> MockServerProcess {
        MockServerProcess(process: nil, port: port, caPath: caPath(forKeyFile: keyFile))
    }

    /// Kills the child, if this process started it. SIGKILL, not `terminate()`'s SIGTERM: the
    /// child is spawned from a concurrency thread, whose signal mask (libdispatch blocks SIGTERM on
    /// its workers) it inherits, so it would never see a SIGTERM.
    func stop() {
        guard let process else { return }
        kill(process.processIdentifier, stopSignal)
        process.waitUntilExit()
        for path in leftovers { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A signing key as the server and the client share it: a JSON array of its four fields.
    static func writeKey(_ key: MockCertificateAuthority.SigningKey, to path: String) throws {
        try JSONEncoder().encode([key.teamID, key.keyID, key.privateKeyPEM, key.publicKeyPEM]).write(
            to: URL(fileURLWithPath: path))
    }

    static func readKey(_ path: String?) throws -> MockCertificateAuthority.SigningKey {
        guard let path, let data = FileManager.default.contents(atPath: path),
            let fields = try? JSONDecoder().decode([String].self, from: data), fields.count == 4
        else { throw BenchmarkError("--key-file must name a key written by --write-key") }
        return MockCertificateAuthority.SigningKey(
            teamID: fields[0], keyID: fields[1], privateKeyPEM: fields[2], publicKeyPEM: fields[3])
    }

    /// Where `--serve` writes its CA certificate: beside the key file.
    static func caPath(forKeyFile keyFile: String) -> String {
        URL(fileURLWithPath: keyFile).deletingLastPathComponent().appendingPathComponent("ca.pem").path
    }

    /// The child: a fast mock server (no recording, several threads) until killed.
    static func serve(keyFile: String?, threads: Int, delayMilliseconds: Int) async throws {
        let key = try readKey(keyFile)
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.recordsRequests = false
        configuration.threads = threads
        configuration.minimumTokenUpdateInterval = nil
        let server = try await MockAPNsServer.start(configuration)
        if delayMilliseconds > 0 { server.inject(.delay(.milliseconds(delayMilliseconds))) }
        let caPath = caPath(forKeyFile: keyFile ?? "")
        try Data(server.certificateAuthorityPEM.utf8).write(to: URL(fileURLWithPath: caPath))
        FileHandle.standardOutput.write(Data("port \(server.port) ca \(caPath)\n".utf8))
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// nghttp2's load generator, for the reference figures.
enum H2Load {
    static func find() -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/h2load"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static func run(
        _ h2load: String, port: Int, count: Int, streams: Int, token: String, request: APNsRequest
    ) throws -> Workload.Result {
        let body = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apns-bench-body-\(UUID().uuidString.prefix(8)).json")
        try Data(request.body).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        var arguments = [
            "-n", String(count), "-c", "1", "-t", "1", "-m", String(streams), "-d", body.path, "-H",
            "authorization: bearer \(token)",
        ]
        for header in request.headers { arguments += ["-H", "\(header.name): \(header.value)"] }
        arguments.append("https://127.0.0.1:\(port)\(request.path)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: h2load)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let cpuBefore = Usage.cpuSeconds(RUSAGE_CHILDREN.rawValue)
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let cpu = Usage.cpuSeconds(RUSAGE_CHILDREN.rawValue) - cpuBefore
        // "finished in 2.03s, 49261.08 req/s, 7.1MB/s" and "requests: 100000 total, … 100000 succeeded, …"
        guard let finished = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
            let rateField = finished.split(separator: ",").dropFirst().first,
            let rate = Double(rateField.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        else { throw BenchmarkError("could not read h2load's output:\n\(text)") }
        let succeeded =
            text.split(separator: "\n").first(where: { $0.hasPrefix("requests:") })
            .flatMap { line in line.split(separator: ",").first(where: { $0.contains("succeeded") }) }
            .flatMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? 0
        if succeeded != count { print("warning: h2load: \(succeeded) of \(count) requests succeeded") }
        return Workload.Result(pushes: count, seconds: Double(count) / rate, cpuSeconds: cpu, outcomes: succeeded)
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The same requests through a minimal libcurl multi loop written in C (`CLibcurlReference`), in
/// this process: what libcurl itself costs, below which no libcurl-based client can go.
enum LibcurlReference {
    /// With `coalesce`, the loop corks its connection while it writes, as swift-apns does
    /// (`CoalescedWrites`): what libcurl costs with the same kernel-side saving.
    static func run(
        port: Int, caPath: String, count: Int, streams: Int, token: String, request: APNsRequest, coalesce: Bool
    ) throws -> Workload.Result {
        let headers = ["authorization: bearer \(token)"] + request.headers.map { "\($0.name): \($0.value)" }
        var cHeaders = headers.map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        var result = libcurl_reference_result()
        let body = request.body.map { CChar(bitPattern: $0) }
        let status = cHeaders.withUnsafeMutableBufferPointer { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { headerPointers in
                libcurl_reference_run(
                    "https://127.0.0.1:\(port)", caPath, headerPointers.baseAddress, Int32(headers.count), body,
                    body.count,
                    count, 100, streams, coalesce ? 1 : 0, &result)
            }
        }
        guard status == 0 else { throw BenchmarkError("the libcurl reference could not start") }
        if result.failed > 0 { print("warning: libcurl reference: \(result.failed) requests failed") }
        return Workload.Result(
            pushes: count, seconds: result.seconds, cpuSeconds: result.cpu_seconds,
            outcomes: result.succeeded - min(100, result.succeeded))
    }
}

extension LibcurlReference {
    /// `count` requests one at a time through the C loop; each one's latency in seconds.
    static func sequential(
        port: Int, caPath: String, count: Int, token: String, request: APNsRequest
    ) throws -> [Double] {
        let headers = ["authorization: bearer \(token)"] + request.headers.map { "\($0.name): \($0.value)" }
        var cHeaders = headers.map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        var result = libcurl_reference_result()
        var latencies = [Double](repeating: 0, count: count)
        let body = request.body.map { CChar(bitPattern: $0) }
        let status = cHeaders.withUnsafeMutableBufferPointer { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { headerPointers in
                latencies.withUnsafeMutableBufferPointer { out in
                    libcurl_reference_sequential(
                        "https://127.0.0.1:\(port)", caPath, headerPointers.baseAddress, Int32(headers.count), body,
                        body.count,
                        count, 100, out.baseAddress, &result)
                }
            }
        }
        guard status == 0 else { throw BenchmarkError("the libcurl reference could not start") }
        if result.failed > 0 { print("warning: libcurl reference (sequential): \(result.failed) requests failed") }
        return latencies
    }
}
