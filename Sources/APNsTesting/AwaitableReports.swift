import APNs
import CoreMetrics
import InMemoryLogging
import Logging
import MetricsTestKit

/// What a connector (or anything that takes a swift-log `Logger` and a swift-metrics factory)
/// reports, as events a test waits for: ``until(_:)`` returns as soon as what it waits for has been
/// logged or counted, with no poll and no clock. A wait for something that never happens is ended
/// by the test's time limit (Swift Testing's `.timeLimit` cancels the test's task), and the
/// expectation after it fails.
///
/// ```swift
/// let reports = AwaitableReports()
/// let connector = try TokenConnector(
///     teamID: teamID, keyID: keyID, key: key, environment: environment,
///     logger: reports.logger, metricsFactory: reports.metrics)
/// // … run it as a service …
/// await reports.until { $0.counter("apns.connections.opened") >= 1 }   // the warm connection
/// #expect(reports.lines("APNs connection idle too long; closing it").isEmpty)
/// ```
///
/// Thread safety: `Sendable`. The counters and the waiters are behind one lock; a waiter is
/// resumed outside it.
public final class AwaitableReports: Sendable {
    /// Every line, from `debug` up.
    public let logs = InMemoryLogHandler()
    /// Where the counters go (through ``metrics``, which signals each change).
    private let recorded = TestMetrics()
    private let state = Locked(State())

    private struct State {
        /// By label, then by dimensions.
        var counters: [String: [[String: String]: Int64]] = [:]
        var lines = 0
        fileprivate var waiters: [Int: Waiter] = [:]
        fileprivate var nextWaiter = 0
    }

    fileprivate struct Waiter {
        let holds: @Sendable (AwaitableReports) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    public init() {}

    /// A logger whose lines go to ``logs``, from `debug` up, each one an event.
    public var logger: Logger {
        var logger = Logger(label: "apns-test", factory: { [self] _ in Handler(reports: self) })
        logger.logLevel = .debug
        return logger
    }

    /// A metrics factory whose counters are events (recorders, meters and timers are kept, not
    /// events).
    public var metrics: any MetricsFactory { Factory(reports: self) }

    /// The total of the counter `label` over every set of dimensions that includes `dimensions`
    /// (all of them, by default).
    public func counter(_ label: String, _ dimensions: [String: String] = [:]) -> Int64 {
        state.withLock { state in
            (state.counters[label] ?? [:]).reduce(into: 0) { total, entry in
                if dimensions.allSatisfy({ entry.key[$0.key] == $0.value }) { total += entry.value }
            }
        }
    }

    /// The lines logged with `message`.
    public func lines(_ message: String) -> [InMemoryLogHandler.Entry] {
        logs.entries.filter { $0.message.description == message }
    }

    /// Returns once `condition` holds (at once if it already does), or when the task is cancelled.
    public func until(_ condition: @escaping @Sendable (AwaitableReports) -> Bool) async {
        if condition(self) { return }
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.withLock { $0.waiters[id] = Waiter(holds: condition, continuation: continuation) }
                changed()  // it may have come true, or the task been cancelled, meanwhile
                if Task.isCancelled { resume(id) }
            }
        } onCancel: {
            resume(id)
        }
    }

    /// Resumes every waiter whose condition now holds.
    private func changed() {
        let waiters = state.withLock { $0.waiters }
        for (id, waiter) in waiters where waiter.holds(self) { resume(id) }
    }

    /// Resumes waiter `id` if it is still waiting.
    private func resume(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
    }

    private func counted(_ label: String, _ dimensions: [String: String], by amount: Int64) {
        state.withLock { $0.counters[label, default: [:]][dimensions, default: 0] += amount }
        changed()
    }

    private struct Handler: LogHandler {
        let reports: AwaitableReports
        var base: InMemoryLogHandler { reports.logs }
        var metadata: Logger.Metadata {
            get { base.metadata }
            set {}
        }
        var logLevel: Logger.Level {
            get { .debug }
            set {}
        }
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { base[metadataKey: key] }
            set {}
        }

        func log(event: LogEvent) {
            base.log(event: event)
            reports.changed()
        }
    }

    private struct Factory: MetricsFactory {
        let reports: AwaitableReports

        func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
            Counter(
                label: label, dimensions: Dictionary(dimensions, uniquingKeysWith: { _, last in last }),
                reports: reports, base: reports.recorded.makeCounter(label: label, dimensions: dimensions))
        }
        func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
            reports.recorded.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
        }
        func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
            reports.recorded.makeMeter(label: label, dimensions: dimensions)
        }
        func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
            reports.recorded.makeTimer(label: label, dimensions: dimensions)
        }
        func destroyCounter(_ handler: any CounterHandler) {}
        func destroyRecorder(_ handler: any RecorderHandler) {}
        func destroyMeter(_ handler: any MeterHandler) {}
        func destroyTimer(_ handler: any TimerHandler) {}
    }

    private final class Counter: CounterHandler {
        let label: String
        let dimensions: [String: String]
        let reports: AwaitableReports
        let base: any CounterHandler

        init(label: String, dimensions: [String: String], reports: AwaitableReports, base: any CounterHandler) {
            self.label = label
            self.dimensions = dimensions
            self.reports = reports
            self.base = base
        }

        func increment(by amount: Int64) {
            base.increment(by: amount)
            reports.counted(label, dimensions, by: amount)
        }
        func reset() { base.reset() }
    }
}
