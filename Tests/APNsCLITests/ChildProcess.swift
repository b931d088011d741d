import APNs
import Foundation
import TestFixtures

/// A child process (the built `apns`, `openssl`, `script`) run as a user's shell runs it, without
/// blocking a Swift concurrency thread: the reads of its output and the wait for its exit, which
/// block, run on a thread of their own. The suites that run processes can then run in the parallel
/// tier beside the transport's, whose sends would starve if the pool's two threads sat in `read`.
///
/// Thread-safety: one `ChildProcess` is used by one test; its `Process` and pipes are touched by the
/// thread that reads them, then only after that thread has handed its result back.
final class ChildProcess: @unchecked Sendable {
    /// A process that has ended: its exit status and everything it wrote.
    struct Ended: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    private let process = TestProcess()
    private let stdout = Pipe()
    private let stderr = Pipe()

    /// Starts `executable` with `arguments`; `environment` replaces the process's own when given.
    /// A long-running process whose errors nobody reads (a server) gets `discardingErrors`: its
    /// standard error would otherwise fill its pipe and stop it.
    init(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
        discardingErrors: Bool = false
    ) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = stdout
        process.standardError = discardingErrors ? FileHandle.nullDevice : stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }
    /// Runs `executable` to its end.
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil
    ) async throws -> Ended {
        try await ChildProcess(executable, arguments, environment: environment).ended()
    }

    /// Waits for the process to end, reading both of its outputs meanwhile (one would fill its pipe
    /// and stop the process if only the other were read).
    func ended() async -> Ended {
        await Self.offThePool { [self] in
            let error = Self.offThePoolStarted { self.stderr.fileHandleForReading.readDataToEndOfFile() }
            let output = stdout.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Ended(
                status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
                stderr: String(decoding: error(), as: UTF8.self))
        }
    }

    /// What the process has written to its standard output once `enough` holds for it, or once it
    /// closed its output (a long-running process: a server that prints where it listens).
    func output(until enough: @escaping @Sendable (String) -> Bool) async -> String {
        await Self.offThePool { [self] in
            var text = ""
            while !enough(text) {
                let chunk = stdout.fileHandleForReading.availableData
                if chunk.isEmpty { break }  // it ended
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text
        }
    }

    /// Asks the process to end (SIGTERM) and does not wait: `Process` reaps it when it does.
    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// Runs `work`, which blocks, on a thread of its own and returns what it returns.
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }

    /// Starts `work` on a thread of its own; the function returned waits for its result (call it
    /// only from a thread that may block).
    private static func offThePoolStarted<T: Sendable>(_ work: @escaping @Sendable () -> T) -> () -> T {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        Thread {
            result.value = work()
            done.signal()
        }.start()
        return {
            done.wait()
            return result.value!
        }
    }

    /// Written by one thread before the semaphore is signalled, read after it is waited for.
    private final class ResultBox<T>: @unchecked Sendable {
        var value: T?
    }
}
