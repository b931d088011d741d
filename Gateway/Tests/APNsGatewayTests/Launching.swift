import Foundation

/// Foundation's `Process.run()` is not safe to call from two threads at once (the library's tests
/// saw it crash copying its arguments when two suites launched together): every process these
/// tests start is launched under this one lock.
enum Launching {
    private static let lock = NSLock()

    /// Launches `process`, one launch at a time in this test process.
    static func run(_ process: Process) throws {
        lock.lock()
        defer { lock.unlock() }
        try process.run()
    }
}
