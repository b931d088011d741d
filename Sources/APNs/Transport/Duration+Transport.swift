extension Duration {
    /// Whole milliseconds, rounded up, so that a positive duration never becomes 0 ("no timeout"
    /// to libcurl).
    /// Saturates at `Int.max` (and 0 for a negative duration): no value overflows, whatever a
    /// caller passed. One division of the 128-bit count (`components` takes more): every transfer's
    /// timeout is converted.
    var millisecondsRoundedUp: Int {
        let attoseconds = self.attoseconds
        guard attoseconds > 0 else { return 0 }
        return Int(clamping: (attoseconds - 1) / 1_000_000_000_000_000 + 1)
    }

    /// This duration times `factor` (for jitter), to the nanosecond.
    func scaled(by factor: Double) -> Duration {
        let (seconds, attoseconds) = components
        let nanoseconds = (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) * factor
        return .nanoseconds(Int64(max(0, min(nanoseconds, 9e18))))
    }
}
