extension Duration {
    /// The duration in seconds, as a `Double` (for rates and printed figures). The library's own
    /// helper is `package`-visible only, and this package is another one.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
