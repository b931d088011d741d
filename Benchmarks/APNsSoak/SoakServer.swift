import APNsMockServer
import Foundation

/// The mock APNs a soak sends to, and the few things the soak asks of it between waves.
///
/// `.process` (the default) runs the mock in a child process — this executable again, with
/// `--serve` — so the soak's RSS curve is the client's alone; `.inProcess` keeps it in this process
/// (the mock's own connections and buffers then count too). Used from the soak's one task, one call
/// at a time.
final class SoakServer {
    let host: String
    let port: Int
    let certificateAuthorityPEM: String
    let key: MockCertificateAuthority.SigningKey
    private let backend: Backend

    private enum Backend {
        case inProcess(MockAPNsServer)
        case process(Process, input: FileHandle, output: LineReader)
    }

    static let teamID = "TEAM000001"
    static let keyID = "KEY0000001"

    /// What the child prints first: where it listens and what a client needs to trust and sign.
    struct Started: Codable {
        var port: Int
        var certificateAuthorityPEM: String
        var privateKeyPEM: String
        var publicKeyPEM: String
    }

    static func startInProcess() async throws -> SoakServer {
        let key = MockCertificateAuthority.makeSigningKey(teamID: teamID, keyID: keyID)
        let server = try await MockAPNsServer.start(configuration(key: key))
        return SoakServer(
            host: server.host, port: server.port, ca: server.certificateAuthorityPEM, key: key,
            backend: .inProcess(server))
    }

    static func startProcess() throws -> SoakServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments = ["--serve"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let reader = LineReader(output.fileHandleForReading)
        guard let line = reader.next(), let started = try? JSONDecoder().decode(Started.self, from: Data(line.utf8))
        else {
            process.terminate()
            throw SoakError("the mock server process did not start")
        }
        let key = MockCertificateAuthority.SigningKey(
            teamID: teamID, keyID: keyID, privateKeyPEM: started.privateKeyPEM, publicKeyPEM: started.publicKeyPEM)
        return SoakServer(
            host: "127.0.0.1", port: started.port, ca: started.certificateAuthorityPEM, key: key,
            backend: .process(process, input: input.fileHandleForWriting, output: reader))
    }

    private init(host: String, port: Int, ca: String, key: MockCertificateAuthority.SigningKey, backend: Backend) {
        self.host = host
        self.port = port
        self.certificateAuthorityPEM = ca
        self.key = key
        self.backend = backend
    }

    static func configuration(key: MockCertificateAuthority.SigningKey) -> MockAPNsServer.Configuration {
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.recordsRequests = false
        configuration.threads = 1
        return configuration
    }

    /// Injects `Soak.faults[index]` (nil: none from now on).
    func inject(faultIndex index: Int?) async throws {
        switch backend {
        case .inProcess(let server):
            guard let index else { return server.inject(nil) }
            let (fault, connections, requests) = Soak.faults[index]
            server.inject(fault, connections: connections, requests: requests)
        case .process:
            _ = try await ask(index.map { "inject \($0)" } ?? "clear")
        }
    }

    func goAwayAll() async throws {
        switch backend {
        case .inProcess(let server): server.goAwayAll()
        case .process: _ = try await ask("goaway")
        }
    }

    /// What the server processed since the last call (``Soak/Processed``): how many times each send
    /// of wave `wave`, by index (capped at 9), and any send of an earlier wave. The child answers
    /// with one digit per send — 10 KB for a wave of 10,000, not a table of apns-ids — so reading
    /// it barely allocates in the process measured.
    func takeProcessedCounts(wave: Int, size: Int) async throws -> Soak.Processed {
        switch backend {
        case .inProcess(let server):
            defer { server.clearProcessedCounts() }
            return Soak.processed(server.processedCounts, wave: wave, size: size)
        case .process:
            let line = try await ask("counts \(wave) \(size)")
            guard let processed = Soak.Processed(line: line, size: size) else {
                throw SoakError("the mock server process answered \(line.prefix(80)) for \(size) counts")
            }
            return processed
        }
    }

    func stop() async throws {
        switch backend {
        case .inProcess(let server): try await server.stop()
        case .process(let process, let input, _):
            _ = try await ask("stop")
            try input.close()
            process.waitUntilExit()
        }
    }

    /// One command to the child, its one-line answer; the pipe is read off the concurrency pool.
    private func ask(_ command: String) async throws -> String {
        guard case .process(_, let input, let output) = backend else { return "" }
        try input.write(contentsOf: Data((command + "\n").utf8))
        let answer: String? = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: output.next()) }
        }
        guard let answer else { throw SoakError("the mock server process ended (after \(command))") }
        return answer
    }

    /// The child's side: starts the mock, prints `Started`, then answers one command per line on
    /// standard input until `stop` or the end of input. Nothing else is written to standard output.
    static func serve() async throws {
        let key = MockCertificateAuthority.makeSigningKey(teamID: teamID, keyID: keyID)
        let server = try await MockAPNsServer.start(configuration(key: key))
        let started = Started(
            port: server.port, certificateAuthorityPEM: server.certificateAuthorityPEM,
            privateKeyPEM: key.privateKeyPEM, publicKeyPEM: key.publicKeyPEM)
        func say(_ line: String) {
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        say(String(decoding: try JSONEncoder().encode(started), as: UTF8.self))
        let input = LineReader(FileHandle.standardInput)
        while true {
            // The child does nothing but serve: its mock runs on its own NIO thread, so waiting for
            // the next command here holds no one up.
            let line: String? = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: input.next()) }
            }
            guard let line, line != "stop" else { break }
            let words = line.split(separator: " ")
            switch words.first {
            case "inject":
                if let index = words.dropFirst().first.flatMap({ Int($0) }), Soak.faults.indices.contains(index) {
                    let (fault, connections, requests) = Soak.faults[index]
                    server.inject(fault, connections: connections, requests: requests)
                }
                say("ok")
            case "clear":
                server.inject(nil)
                say("ok")
            case "goaway":
                server.goAwayAll()
                say("ok")
            case "counts":
                let numbers = words.dropFirst().compactMap { Int($0) }
                let counts = server.processedCounts
                server.clearProcessedCounts()
                guard numbers.count == 2 else {
                    say("usage: counts WAVE SIZE")
                    continue
                }
                say(Soak.processed(counts, wave: numbers[0], size: numbers[1]).line)
            default:
                say("unknown command")
            }
        }
        try await server.stop()
        say("ok")
    }
}

/// Lines from a file handle, read in blocks (blocking: call it off the concurrency pool).
final class LineReader: @unchecked Sendable {
    // Safe: the soak reads each reader from one place at a time (one command in flight).
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}

struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
