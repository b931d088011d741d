extension Duration {
    /// Whole milliseconds, rounded up, so that a positive duration never becomes 0 ("no timeout"
    /// to libcurl).
    /// Saturates at `Int.max` (and 0 for a negative duration): no value overflows, whatever a
    /// caller passed.
    var millisecondsRoundedUp: Int {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        guard seconds < Int64.max / 1000 - 1 else { return Int.max }
        let perMillisecond: Int64 = 1_000_000_000_000_000
        return Int(seconds) * 1000 + Int((attoseconds + perMillisecond - 1) / perMillisecond)
    }

    /// This duration times `factor` (for jitter), to the nanosecond.
    func scaled(by factor: Double) -> Duration {
        let (seconds, attoseconds) = components
        let nanoseconds = (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) * factor
        return .nanoseconds(Int64(max(0, min(nanoseconds, 9e18))))
    }
}
