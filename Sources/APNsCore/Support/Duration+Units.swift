/// Conversions every target of the package shares (the transport, the mock server, the benchmarks).
extension Duration {
    /// The duration in seconds, as a `Double` (for rates and printed figures).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, saturating (for swift-metrics timers and NIO's `TimeAmount`).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
