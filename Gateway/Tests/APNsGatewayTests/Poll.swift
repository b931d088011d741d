/// Waits for what is made true where no event reaches the test: a queue a real gateway process
/// drains, a dispatcher's progress in the store. Not a wait for time to pass: the limit only ends
/// a wait for something that never happens.
enum Poll {
    /// Checks `condition` every `interval` until it holds (true) or `limit` has passed (false).
    @discardableResult
    static func until(
        within limit: Duration = .seconds(60), every interval: Duration = .milliseconds(5),
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
}
