import Tracing

/// The span, metrics and log lines of one bulk send: one `apns.bulk_send` span for the whole send
/// (started when iteration starts, ended when the last outcome is read or the reader goes away),
/// and each device's outcome counted and timed like a single send.
///
/// Thread safety: `Sendable`; the counts are behind a lock (the reader records, and the last
/// iterator copy's release may finish from another thread).
final class BulkObservation: Sendable {
    private let summary: RequestSummary
    private let observability: Observability
    private let span: (any Span)?
    private let metrics: Observability.PushTypeMetrics?
    private let state = Locked<(counts: BulkSendSummary, retries: Int, finished: Bool)>((BulkSendSummary(), 0, false))

    init(summary: RequestSummary, observability: Observability) {
        self.summary = summary
        self.observability = observability
        span = observability.startSpan("apns.bulk_send", summary: summary)
        metrics = observability.isEnabled ? observability.metrics(forPushType: summary.pushType) : nil
    }

    /// One device's outcome, as the reader receives it.
    func record(_ outcome: BulkOutcome, duration: Duration, attempts: Int) {
        state.withLock { state in
            state.counts.count(outcome, collectingTokens: false)
            state.retries += attempts - 1
        }
        guard observability.isEnabled else { return }
        observability.recordSend(
            pushType: summary.pushType, result: outcome.result, duration: duration, cached: metrics)
        observability.retried(.policy, times: attempts - 1)
        observability.logSend(
            summary, result: outcome.result, duration: duration, attempts: attempts, device: outcome.device.token)
    }

    /// Ends the span with the counts, once.
    func finish(cancelled: Bool) {
        let ended = state.withLock { state -> (BulkSendSummary, Int)? in
            guard !state.finished else { return nil }
            state.finished = true
            state.counts.cancelled = cancelled
            return (state.counts, state.retries)
        }
        guard let (counts, retries) = ended else { return }
        if let span, span.isRecording {
            span.attributes["apns.bulk.accepted"] = counts.accepted
            span.attributes["apns.bulk.rejected"] = counts.rejected
            span.attributes["apns.bulk.failed"] = counts.failed
            span.attributes["apns.bulk.delivery_unknown"] = counts.deliveryUnknown
            span.attributes["apns.bulk.cancelled"] = counts.cancelled
            span.attributes["apns.retries"] = retries
            if counts.failed > 0 || counts.rejected > 0 {
                span.attributes["error.type"] = counts.failed > 0 ? "partial_failure" : "partial_rejection"
            }
        }
        span?.end()
        if observability.isEnabled {
            var metadata = summary.metadata
            metadata["apns.bulk.accepted"] = "\(counts.accepted)"
            metadata["apns.bulk.rejected"] = "\(counts.rejected)"
            metadata["apns.bulk.failed"] = "\(counts.failed)"
            metadata["apns.bulk.delivery_unknown"] = "\(counts.deliveryUnknown)"
            metadata["apns.bulk.cancelled"] = "\(counts.cancelled)"
            observability.logger.debug("APNs bulk send finished", metadata: metadata)
            if let cause = counts.likelyCause {
                // The one line that says why, at notice: a whole batch refused is a configuration
                // mistake, not dead tokens.
                metadata["apns.bulk.bad_device_tokens"] = "\(counts.badDeviceTokens)"
                observability.logger.notice("APNs bulk send: \(cause)", metadata: metadata)
            }
        }
    }
}
