extension CurlMultiLoop {
    /// A check the loop (or one of its owners) makes at most once per interval, given the pass's
    /// clock reading.
    ///
    /// Thread safety: none; used on the loop thread only. A class, so that whoever holds one holds
    /// it with `let` and its one field changes here alone.
    final class Periodic {
        let interval: Duration
        @exclusivity(unchecked) private var next: ContinuousClock.Instant

        /// Due at once (at `start`), or, `startingAfterOne`, one interval after it.
        init(every interval: Duration, startingAt start: ContinuousClock.Instant, startingAfterOne: Bool = false) {
            self.interval = interval
            next = startingAfterOne ? start + interval : start
        }

        /// True when the interval has passed since it was last due (and from now on counts again).
        func isDue(at now: ContinuousClock.Instant) -> Bool {
            guard now >= next else { return false }
            next = now + interval
            return true
        }
    }
}
