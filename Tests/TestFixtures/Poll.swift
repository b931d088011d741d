/// Waits for what is made true where no event reaches the test: a count the mock server keeps on
/// its own threads, a frame a raw connection read, a process's state. Not a wait for time to pass:
/// the limit only ends a wait for something that never happens, and a test that needs real time to
/// pass says so beside its own sleep.
package enum Poll {
    /// Checks `condition` every `interval` until it holds (true) or `limit` has passed (false).
    @discardableResult
    package static func until(
        within limit: Duration = .seconds(20), every interval: Duration = .milliseconds(5),
        _ condition: () async throws -> Bool
    ) async rethrows -> Bool {
        let end = ContinuousClock.now + limit
        while try await !condition() {
            guard ContinuousClock.now < end else { return false }
            // The polls' one sleep: between two looks at state that signals nothing when it changes.
            try? await Task.sleep(for: interval)
        }
        return true
    }

    /// What `read` gives once it has not changed for `quiet` (looked at every `interval`), or when
    /// `limit` has passed: the count of what a transport started, once it has stopped starting more.
    package static func settled<Value: Equatable>(
        within limit: Duration = .seconds(20), quiet: Duration = .milliseconds(600),
        every interval: Duration = .milliseconds(200), _ read: () -> Value
    ) async -> Value {
        var last = read()
        var unchangedSince = ContinuousClock.now
        await until(within: limit, every: interval) {
            let now = read()
            if now != last {
                last = now
                unchangedSince = .now
            }
            return ContinuousClock.now - unchangedSince >= quiet
        }
        return last
    }
}
