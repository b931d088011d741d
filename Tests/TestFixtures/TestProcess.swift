import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process for the tests, started with `posix_spawn` instead of Foundation's `Process`,
/// whose `run()` on Linux (Swift 6.3) over-reads each `/proc/self/fd` entry it lists and crashes
/// the test process now and then when it has many descriptors open (a bad pointer in `memcpy`
/// under `Process.run()`; fixed in swift-corelibs-foundation after 6.3). It has the part of
/// `Process`'s interface the tests use, so a test reads as it did.
///
/// The child gets the pipes or handles given for its standard input, output and error, and no
/// other descriptor of the test process (`closefrom(3)` in its spawn, looked up at run time since
/// Glibc's module does not declare it): a test's pipe is never held open by another test's child.
/// The parent's copies of the child's pipe ends are closed once it runs, so a reader sees the end
/// of its output when it exits. A thread of its own waits for the exit.
///
/// Thread safety: configure it, then `run()` it, from one task; afterwards ``isRunning``,
/// ``terminationStatus``, ``waitUntilExit()`` and ``terminate()`` may be used from any thread:
/// the state set at exit is behind a lock.
package final class TestProcess: @unchecked Sendable {
    /// Why a process ended, as `Process` says it.
    package enum TerminationReason: Sendable { case exit, uncaughtSignal }

    package var executableURL: URL?
    package var arguments: [String] = []
    /// Replaces the test process's environment when set.
    package var environment: [String: String]?
    /// A `Pipe` or a `FileHandle` for each; nil inherits nothing (`/dev/null`).
    package var standardInput: Any?
    package var standardOutput: Any?
    package var standardError: Any?
    /// Called on the waiting thread when the process has exited.
    package var terminationHandler: (@Sendable (TestProcess) -> Void)?

    private let state = NSCondition()
    private var pid: pid_t = 0
    private var exit: (status: Int32, reason: TerminationReason)?

    package init() {}

    package var processIdentifier: Int32 { state.withLock { pid } }
    package var isRunning: Bool { state.withLock { pid != 0 && exit == nil } }
    /// The exit status, or the signal that ended it.
    package var terminationStatus: Int32 { state.withLock { exit?.status ?? 0 } }
    package var terminationReason: TerminationReason { state.withLock { exit?.reason ?? .exit } }

    /// Starts the process.
    package func run() throws {
        guard let path = executableURL?.path else { throw SpawnError("no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(devNull) }
        // The parent's handles of the child's pipe ends, closed once the child has its copies.
        var childEnds: [FileHandle] = []
        for (target, given, forReading) in [
            (Int32(0), standardInput, true), (Int32(1), standardOutput, false), (Int32(2), standardError, false),
        ] {
            let source: Int32
            switch given {
            case let pipe as Pipe:
                let end = forReading ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                source = end.fileDescriptor
                childEnds.append(end)
            case let handle as FileHandle:
                source = handle.fileDescriptor
            default:
                source = devNull
            }
            posix_spawn_file_actions_adddup2(&actions, source, target)
        }
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables =
            (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in variables { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, nil, argv, variables)
        guard status == 0 else { throw SpawnError("posix_spawn \(path): \(String(cString: strerror(status)))") }
        // The child has its copies; the parent's go, so that its output ends when it exits.
        for end in childEnds { try? end.close() }
        state.withLock { pid = child }
        let thread = Thread { [self, child] in
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Glibc's module does not import.
            let signal = raw & 0x7f
            let ended =
                signal == 0 ? (status: (raw >> 8) & 0xff, reason: TerminationReason.exit) : (signal, .uncaughtSignal)
            state.withLock {
                exit = ended
                state.broadcast()
            }
            terminationHandler?(self)
        }
        thread.start()
    }

    /// Blocks until the process has exited.
    package func waitUntilExit() {
        state.withLock {
            while exit == nil { state.wait() }
        }
    }

    /// SIGTERM.
    package func terminate() {
        let child = processIdentifier
        if child != 0, isRunning { kill(child, SIGTERM) }
    }

    /// SIGINT.
    package func interrupt() {
        let child = processIdentifier
        if child != 0, isRunning { kill(child, SIGINT) }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), nil where it is not.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            else { return nil }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    package struct SpawnError: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }
}
