import Metrics
import Synchronization

/// `apns_gateway_sending_paused{cause, credential}`: 1 while the credential's sending is paused
/// for the cause, else 0; each credential's gauges made at its first pause (the credential flags'
/// at start). Credentials are few and named by the operator.
///
/// Thread safety: `Sendable`; a `Mutex` guards the gauges.
final class PauseGauges: Sendable {
    let factory: any MetricsFactory
    private let gauges = Mutex<[String: [UpstreamCause: Gauge]]>([:])

    init(factory: any MetricsFactory) { self.factory = factory }

    /// `credential` is paused for `cause`.
    func paused(_ credential: String, _ cause: UpstreamCause) {
        for (each, gauge) in of(credential) { gauge.record(each == cause ? 1 : 0) }
    }

    /// `credential` sends.
    func clear(_ credential: String) {
        for gauge in of(credential).values { gauge.record(0) }
    }

    private func of(_ credential: String) -> [UpstreamCause: Gauge] {
        gauges.withLock { gauges in
            if let existing = gauges[credential] { return existing }
            let made = Dictionary(
                uniqueKeysWithValues: UpstreamCause.allCases.map {
                    (
                        $0,
                        Gauge(
                            label: "apns_gateway_sending_paused",
                            dimensions: [("cause", $0.rawValue), ("credential", credential)], factory: factory)
                    )
                })
            gauges[credential] = made
            return made
        }
    }
}
