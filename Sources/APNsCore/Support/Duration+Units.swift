/// Conversions every target of the package shares (the transport, the mock server, the benchmarks).
extension Duration {
    /// The duration in seconds, as a `Double` (for rates and printed figures).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, towards zero, saturating (for swift-metrics timers and NIO's
    /// `TimeAmount`). One division of the 128-bit count: `components` takes two and more, and
    /// every send's duration is converted.
    package var nanoseconds: Int64 {
        Int64(clamping: attoseconds / 1_000_000_000)
    }
}
