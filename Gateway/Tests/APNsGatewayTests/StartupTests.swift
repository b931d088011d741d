import APNsGateway
import APNsMockServer
import Foundation
import InMemoryLogging
import Logging
import Testing

/// `apns-gateway serve` with a PostgreSQL server that does not answer: a clear error after a
/// bounded wait, and SIGTERM while it waits is a clean stop.
@Suite struct StartupTests {
    /// A listening socket on 127.0.0.1 that accepts nothing (a server that never answers).
    static func silentPort() throws -> (socket: Int32, port: Int) {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && listen(socket, 1) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw SetupError("cannot listen on 127.0.0.1") }
        return (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func start(database: String, extra: [String]) throws -> (TestProcess, Pipe, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("startup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let keyFile = folder.appendingPathComponent("AuthKey.p8")
        try key.privateKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
        let process = TestProcess()
        process.executableURL = CrashSafetyTests.binary
        process.arguments =
            [
                "serve", "--port", "0", "--database", database, "--key-file", keyFile.path, "--key-id", key.keyID,
                "--team-id", key.teamID, "--apns-host", "127.0.0.1:9",
            ] + extra
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        return (process, errors, folder)
    }

    /// A store whose pool is started in a task and prepared at once, as `apns-gateway` and the
    /// benchmark do: its first query waits for the pool to run, so postgres-nio has nothing to warn
    /// about (it logged "`PostgresClient.run()` hasn't been called yet" in most such starts).
    @Test func preparingAStoreWaitsForItsPoolToRun() async throws {
        let queue = try await TestStore(.postgres)
        for _ in 0..<5 {
            let logs = InMemoryLogHandler()
            let store = try PostgresStore(url: queue.url, logger: Logger(label: "test") { _ in logs })
            let pool = Task { await store.run() }
            try await store.prepare()
            pool.cancel()
            await pool.value
            let warnings = logs.entries.filter { $0.level >= .warning }.map { "\($0.message)" }
            #expect(warnings.isEmpty, "\(warnings)")
        }
        await queue.remove()
    }

    @Test func anUnreachableDatabaseIsAClearErrorAfterTheWait() throws {
        let (socket, port) = try Self.silentPort()
        defer { close(socket) }
        let started = ContinuousClock.now
        let (process, errors, folder) = try Self.start(
            database: "postgres://postgres@127.0.0.1:\(port)/gateway?sslmode=disable",
            extra: ["--database-wait-seconds", "2"])
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let elapsed = ContinuousClock.now - started
        #expect(process.terminationStatus == 1)
        #expect(
            text.contains(
                "PostgreSQL did not answer within 2 s: check that the server in --database runs, is reachable from here and accepts this user (--database-wait-seconds waits longer)"
            ), "\(text)")
        #expect(elapsed < .seconds(30), "took \(elapsed)")
    }

    @Test func sigtermWhileWaitingForTheDatabaseExitsZero() async throws {
        let (socket, port) = try Self.silentPort()
        defer { close(socket) }
        let (process, errors, folder) = try Self.start(
            database: "postgres://postgres@127.0.0.1:\(port)/gateway?sslmode=disable",
            extra: ["--database-wait-seconds", "600"])
        defer { try? FileManager.default.removeItem(at: folder) }
        // Once it says it is connecting, the signals are trapped.
        var log = Data()
        while !String(decoding: log, as: UTF8.self).contains("connecting to PostgreSQL"),
            let chunk = try errors.fileHandleForReading.read(upToCount: 1), !chunk.isEmpty
        {
            log.append(chunk)
        }
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
    }
}
