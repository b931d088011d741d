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

    /// The last instant at which a request handed to the transport at `submitted` may still be
    /// written to a connection: its deadline less a reserve for the answer, a tenth of the time it
    /// had when it was handed over, at most ``answerReserve``.
    ///
    /// A request written later would most likely end `unknown` (written, no answer by the deadline),
    /// which a caller may not send again without accepting a duplicate; held back, it ends
    /// `timedOut` and `notSent`, which any caller may send again. Requests wait that long only
    /// when they queue behind others: for a stream (APNs' one stream on a new token connection, a
    /// server's lower stream limit) or a connection (<doc:Reliability>).
    static func lastWrite(
        submitted: ContinuousClock.Instant, deadline: ContinuousClock.Instant
    ) -> ContinuousClock.Instant {
        let budget = deadline - submitted
        guard budget > .zero else { return deadline }
        return deadline - min(answerReserve, budget / 10)
    }

    /// The most of a send's time ``lastWrite(submitted:deadline:)`` keeps for the answer: APNs
    /// answers within a round trip, far less than a second, unless it is failing.
    static let answerReserve: Duration = .seconds(1)
}
