import Metrics
import Synchronization

/// Counters of one label with an `app` dimension beside others (`result`, say), made on first use.
///
/// The apps are bounded by configuration (a notification is accepted only for an app an API key
/// names), and this bounds them again against any mistake: past ``maximumApps`` distinct apps,
/// the rest are counted as `other`, so a metrics backend never gets an unbounded label.
///
/// Thread safety: `Sendable`; a `Mutex` guards the counters.
final class AppCounters: Sendable {
    /// Distinct apps counted by name; past this, `other`.
    static let maximumApps = 1_000

    let label: String
    let factory: any MetricsFactory
    private let counters = Mutex<(byKey: [[String]: Counter], apps: Set<String>)>(([:], []))

    init(label: String, factory: any MetricsFactory) {
        self.label = label
        self.factory = factory
    }

    /// Adds `count` to the counter of `app` and `dimensions`.
    func increment(app: String, _ dimensions: [(String, String)] = [], by count: Int = 1) {
        let counter = counters.withLock { state -> Counter in
            var name = app
            if !state.apps.contains(app) {
                if state.apps.count < Self.maximumApps { state.apps.insert(app) } else { name = "other" }
            }
            let all = dimensions + [("app", name)]
            let key = all.flatMap { [$0.0, $0.1] }
            if let existing = state.byKey[key] { return existing }
            let made = Counter(label: label, dimensions: all, factory: factory)
            state.byKey[key] = made
            return made
        }
        counter.increment(by: count)
    }
}
