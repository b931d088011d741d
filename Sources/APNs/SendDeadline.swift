/// Where every send's deadline is worked out: single sends, bulk sends (per device), channel
/// management and requests performed directly on a connector.
///
/// A send's timeout counts from when the send starts (for a bulk send, when its device's request
/// is handed to the connector), retries included: one deadline for every attempt. Without a
/// timeout, swift-apns' own connectors apply their `TransportConfiguration.requestTimeout`; any
/// other connector applies its own, unless the send retries, which needs one deadline for all its
/// attempts: then the transport's default.
enum SendDeadline {
    /// The deadline of a send through swift-apns' own connector, which always has one.
    static func of(
        timeout: Duration?, from start: ContinuousClock.Instant, engine: ConnectorEngine
    )
        -> ContinuousClock.Instant
    {
        start + (timeout ?? engine.defaultTimeout)
    }

    /// The deadline of a send through any connector; nil leaves it to the connector.
    static func of(
        timeout: Duration?, from start: ContinuousClock.Instant, engine: ConnectorEngine?, retry: RetryPolicy
    ) -> ContinuousClock.Instant? {
        if let engine { return of(timeout: timeout, from: start, engine: engine) }
        if let timeout { return start + timeout }
        guard retry.maximumAttempts > 1 else { return nil }
        return start + TransportConfiguration.defaultRequestTimeout
    }
}
