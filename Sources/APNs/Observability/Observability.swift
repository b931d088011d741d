import CoreMetrics
import Logging
import Tracing

/// What one connector reports about its work: log lines to its logger, metrics to its metrics
/// factory, and spans to the tracer that is active where a send is made.
///
/// One owner for every name: the metric labels and dimensions here are the ones the
/// Observability article's table lists (a test reads them back through swift-metrics' test kit).
///
/// Nothing here ever sees a JWT, a key, a passphrase or a certificate: the connector hands it
/// push types, topics, statuses, reasons and device-token prefixes only. A whole device token is
/// logged at `trace` and nowhere else.
///
/// Thread safety: `Sendable`. The logger is a value; the fixed metric objects are created once in
/// `init` (swift-metrics' objects are thread-safe); the per-dimension caches are behind a lock.
final class Observability: Sendable {
    /// Metric labels and the values of their bounded dimensions.
    enum Metric {
        static let sends = "apns.sends"
        static let sendDuration = "apns.send.duration"
        static let sendsInFlight = "apns.sends.in_flight"
        static let connectionsOpen = "apns.connections.open"
        static let connectionsOpened = "apns.connections.opened"
        static let connectionsStalled = "apns.connections.stalled"
        static let connectionsRetiredIdle = "apns.connections.retired_idle"
        static let goaways = "apns.goaways"
        static let retries = "apns.retries"
        static let tokensMinted = "apns.tokens.minted"
        static let circuitTrips = "apns.circuit.trips"
        static let slowCycles = "apns.pool.slow_cycles"
        static let connectionsAdded = "apns.pool.connections_added"
        static let connectionsRetired = "apns.pool.connections_retired"
    }

    /// Why a request was sent again.
    enum RetryReason: String, CaseIterable {
        /// The server refused the stream before processing it (REFUSED_STREAM, or GOAWAY with a lower
        /// last-stream-id): the transport queued it again.
        case refusedStream = "refused_stream"
        /// The send's ``RetryPolicy`` asked for another attempt.
        case policy
        /// APNs called the token expired; the token connector minted a new one and sent again.
        case expiredToken = "expired_token"
        /// APNs tied the connection to another key; the transport closed it and the request went
        /// again on a new one.
        case unrelatedKey = "unrelated_key"
    }

    /// The connector's logger (background events and each send).
    let logger: Logger
    /// Whether log lines and metrics are reported (false for connectors other than swift-apns'
    /// own, which have no logger or factory, and for the benchmark's reference).
    let isEnabled: Bool
    /// Whether sends start spans (false only for the benchmark's reference run).
    let tracesSpans: Bool

    private let factory: any MetricsFactory
    /// Whether metrics go anywhere (a factory other than swift-metrics' no-op one).
    private let hasMetrics: Bool
    let sendsInFlight: Meter
    let connectionsOpen: Meter
    let connectionsOpened: CoreMetrics.Counter
    let connectionsStalled: CoreMetrics.Counter
    let connectionsRetiredIdle: CoreMetrics.Counter
    let goaways: CoreMetrics.Counter
    let tokensMinted: CoreMetrics.Counter
    let circuitTrips: CoreMetrics.Counter
    let slowCycles: CoreMetrics.Counter
    let connectionsAdded: CoreMetrics.Counter
    let connectionsRetired: CoreMetrics.Counter
    private let retryCounters: [RetryReason: CoreMetrics.Counter]
    private let sendCounters = Locked<[SendDimensions: CoreMetrics.Counter]>([:])
    private let durationTimers = Locked<[String: CoreMetrics.Timer]>([:])

    /// - Parameters:
    ///   - logger: Where log lines go; swift-log's no-op handler when the user gives none.
    ///   - metricsFactory: Where metrics go; `MetricsSystem.factory` (the bootstrapped one, or
    ///     no-op) when nil.
    ///   - enabled: False for a connector that reports nothing (the benchmark's reference).
    init(logger: Logger?, metricsFactory: (any MetricsFactory)?, enabled: Bool = true, tracesSpans: Bool = true) {
        self.logger = logger ?? Observability.silentLogger
        isEnabled = enabled
        self.tracesSpans = tracesSpans
        let factory = metricsFactory ?? MetricsSystem.factory
        self.factory = factory
        hasMetrics = !(factory is NOOPMetricsHandler)
        sendsInFlight = Meter(label: Metric.sendsInFlight, factory: factory)
        connectionsOpen = Meter(label: Metric.connectionsOpen, factory: factory)
        connectionsOpened = Counter(label: Metric.connectionsOpened, factory: factory)
        connectionsStalled = Counter(label: Metric.connectionsStalled, factory: factory)
        connectionsRetiredIdle = Counter(label: Metric.connectionsRetiredIdle, factory: factory)
        goaways = Counter(label: Metric.goaways, factory: factory)
        tokensMinted = Counter(label: Metric.tokensMinted, factory: factory)
        circuitTrips = Counter(label: Metric.circuitTrips, factory: factory)
        slowCycles = Counter(label: Metric.slowCycles, factory: factory)
        connectionsAdded = Counter(label: Metric.connectionsAdded, factory: factory)
        connectionsRetired = Counter(label: Metric.connectionsRetired, factory: factory)
        var retryCounters: [RetryReason: CoreMetrics.Counter] = [:]
        for reason in RetryReason.allCases {
            retryCounters[reason] = Counter(
                label: Metric.retries, dimensions: [("apns.retry.reason", reason.rawValue)], factory: factory)
        }
        self.retryCounters = retryCounters
    }

    /// A logger that drops everything: the default, as swift-log asks of libraries.
    static let silentLogger = Logger(label: "apns", factory: { _ in SwiftLogNoOpLogHandler() })

    /// For sends through other connectors (a recording connector, your own): spans only.
    static let spansOnly = Observability(logger: nil, metricsFactory: NOOPMetricsHandler.instance, enabled: false)

    /// The benchmark's reference: reports nothing, not even to no-op backends.
    static let disabled = Observability(
        logger: nil, metricsFactory: NOOPMetricsHandler.instance, enabled: false, tracesSpans: false)

    /// Whether anything would see an event logged at `level` or counted: work worth paying for
    /// only then (the GOAWAY watch).
    func isListening(at level: Logger.Level) -> Bool {
        isEnabled && (hasMetrics || logger.logLevel <= level)
    }

    func retried(_ reason: RetryReason, times: Int = 1) {
        guard isEnabled, times > 0 else { return }
        retryCounters[reason]?.increment(by: Int64(times))
    }

    // MARK: Sends

    /// The bounded dimensions of one finished send; never a token or an apns-id.
    struct SendDimensions: Hashable {
        var pushType: String
        var outcome: String
        var status: String
        var reason: String
        var errorType: String

        init(pushType: String, result: Result<APNsResponse, APNsError>) {
            self.pushType = pushType
            switch result {
            case .success(let response):
                (outcome, status, reason, errorType) = ("accepted", String(response.status), "none", "none")
            case .failure(.rejected(let rejection)):
                let reason = rejection.reason.map { $0.isKnown ? $0.rawValue : "unknown" } ?? "none"
                (outcome, status, self.reason, errorType) = ("rejected", String(rejection.status), reason, "none")
            case .failure(.transport(let failure)):
                outcome = failure.delivery == .unknown ? "delivery_unknown" : "failed"
                (status, reason, errorType) = ("none", "none", failure.kind.rawValue)
            case .failure(.credential):
                (outcome, status, reason, errorType) = ("failed", "none", "none", "credential")
            case .failure(.validation):
                (outcome, status, reason, errorType) = ("failed", "none", "none", "validation")
            case .failure(.bulkResultsAlreadyIterated):
                (outcome, status, reason, errorType) = ("failed", "none", "none", "other")
            }
        }

        /// A send refused before any I/O.
        init(pushType: String, refusal error: APNsError) {
            self.init(pushType: pushType, result: .failure(error))
            outcome = "invalid"
            if case .validation(let rule) = error { reason = rule.rule }
        }
    }

    /// The metrics of one push type's common case, looked up once for a bulk send.
    struct PushTypeMetrics: Sendable {
        let accepted: CoreMetrics.Counter
        let duration: CoreMetrics.Timer
    }

    func metrics(forPushType pushType: String) -> PushTypeMetrics {
        let accepted = SendDimensions(pushType: pushType, result: .success(APNsResponse(status: 200)))
        return PushTypeMetrics(accepted: counter(for: accepted), duration: timer(for: pushType))
    }

    /// Counts and logs (at debug) a send refused before any I/O: `apns.outcome` `invalid`,
    /// `apns.reason` the rule broken, `error.type` `validation` or `credential`.
    func recordRefusal(pushType: String, error: APNsError) {
        guard isEnabled else { return }
        counter(for: SendDimensions(pushType: pushType, refusal: error)).increment()
        guard logger.logLevel <= .debug else { return }
        logger.debug(
            "APNs push refused before sending", error: error,
            metadata: ["apns.push_type": "\(pushType)", "apns.outcome": "invalid"])
    }

    /// Counts a finished send and records its latency; `cached` holds the push type's metrics
    /// when the caller looked them up already.
    func recordSend(
        pushType: String, result: Result<APNsResponse, APNsError>, duration: Duration, cached: PushTypeMetrics? = nil
    ) {
        guard isEnabled else { return }
        if let cached {
            if case .success(let response) = result, response.status == 200 {
                cached.accepted.increment()
            } else {
                counter(for: SendDimensions(pushType: pushType, result: result)).increment()
            }
            cached.duration.recordNanoseconds(duration.nanoseconds)
            return
        }
        counter(for: SendDimensions(pushType: pushType, result: result)).increment()
        timer(for: pushType).recordNanoseconds(duration.nanoseconds)
    }

    private func counter(for dimensions: SendDimensions) -> CoreMetrics.Counter {
        sendCounters.withLock { cache -> CoreMetrics.Counter in
            if let counter = cache[dimensions] { return counter }
            let counter = Counter(
                label: Metric.sends,
                dimensions: [
                    ("apns.push_type", dimensions.pushType), ("apns.outcome", dimensions.outcome),
                    ("http.response.status_code", dimensions.status), ("apns.reason", dimensions.reason),
                    ("error.type", dimensions.errorType),
                ],
                factory: factory)
            cache[dimensions] = counter
            return counter
        }
    }

    private func timer(for pushType: String) -> CoreMetrics.Timer {
        durationTimers.withLock { cache -> CoreMetrics.Timer in
            if let timer = cache[pushType] { return timer }
            let timer = Timer(label: Metric.sendDuration, dimensions: [("apns.push_type", pushType)], factory: factory)
            cache[pushType] = timer
            return timer
        }
    }

    /// Logs a finished send at `debug`, with a token prefix (the whole token is logged only at
    /// `trace`, by the send path's "Sending APNs push").
    func logSend(
        _ summary: RequestSummary, result: Result<APNsResponse, APNsError>, duration: Duration, attempts: Int,
        device: @autoclosure () -> String?
    ) {
        guard isEnabled, logger.logLevel <= .debug else { return }
        var metadata = summary.metadata
        metadata["apns.duration_ms"] = "\(duration / .milliseconds(1))"
        if attempts > 1 { metadata["apns.retries"] = "\(attempts - 1)" }
        if let device = device() { metadata["apns.device"] = "\(Observability.tokenPrefix(device))" }
        switch result {
        case .success(let response):
            metadata["http.response.status_code"] = "\(response.status)"
            if let id = response.apnsID { metadata["apns.id"] = "\(id)" }
            logger.debug("APNs accepted the push", metadata: metadata)
        case .failure(.rejected(let rejection)):
            metadata["http.response.status_code"] = "\(rejection.status)"
            metadata["apns.reason"] = "\(rejection.reason?.rawValue ?? "none")"
            if let id = rejection.apnsID { metadata["apns.id"] = "\(id)" }
            logger.debug("APNs rejected the push", metadata: metadata)
        case .failure(let error):
            if case .transport(let failure) = error {
                metadata["error.type"] = "\(failure.kind)"
                metadata["apns.delivery"] = "\(failure.delivery)"
            }
            logger.debug("APNs push failed", error: error, metadata: metadata)
        }
    }

    /// The first 8 characters of a device token: enough to tell devices apart in a log, not
    /// enough to address one.
    static func tokenPrefix(_ token: String) -> String {
        token.utf8.count > 8 ? String(token.prefix(8)) + "…" : token
    }

    // MARK: Spans

    /// Starts the span of one send (or one bulk send) in the caller's context, with the tracer
    /// active there (the bootstrapped one, one bound with `withTracer`, or the no-op tracer).
    func startSpan(_ name: String, summary: RequestSummary) -> (any Span)? {
        guard tracesSpans else { return nil }
        let span = InstrumentationSystem.tracer.startSpan(
            name, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        if span.isRecording {
            span.attributes["apns.push_type"] = summary.pushType
            span.attributes["apns.topic"] = summary.topic
            if let id = summary.apnsID { span.attributes["apns.id"] = id }
        }
        return span
    }

    /// Records a finished send on its span and ends it.
    static func endSpan(_ span: (any Span)?, result: Result<APNsResponse, APNsError>, attempts: Int) {
        guard let span else { return }
        if span.isRecording {
            span.attributes["apns.retries"] = attempts - 1
            switch result {
            case .success(let response):
                span.attributes["http.response.status_code"] = response.status
                if let id = response.apnsID { span.attributes["apns.id"] = id.description }
            case .failure(.rejected(let rejection)):
                span.attributes["http.response.status_code"] = rejection.status
                span.attributes["apns.reason"] = rejection.reason?.rawValue ?? "none"
                span.attributes["error.type"] = rejection.reason?.rawValue ?? String(rejection.status)
                if let id = rejection.apnsID { span.attributes["apns.id"] = id.description }
                span.setStatus(SpanStatus(code: .error))
            case .failure(let error):
                if case .transport(let failure) = error {
                    span.attributes["error.type"] = failure.kind.rawValue
                    span.attributes["apns.delivery"] = failure.delivery.rawValue
                } else {
                    span.attributes["error.type"] = SendDimensions(pushType: "", result: result).errorType
                }
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error))
            }
        }
        span.end()
    }
}

/// What log lines and spans say about a request: its push type, topic and apns-id, read from the
/// request's own headers (never its authorization).
struct RequestSummary: Sendable {
    var pushType: String
    var topic: String
    var apnsID: String?

    init(_ request: APNsRequest) {
        var pushType = "none"
        var topic = "none"
        var apnsID: String?
        for header in request.headers {
            switch header.name {
            case APNsRequest.Header.Name.apnsPushType.rawValue: pushType = header.value
            case APNsRequest.Header.Name.apnsTopic.rawValue: topic = header.value
            case APNsRequest.Header.Name.apnsID.rawValue: apnsID = header.value
            default: break
            }
        }
        self.pushType = pushType
        self.topic = topic
        self.apnsID = apnsID
    }

    var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = ["apns.push_type": "\(pushType)", "apns.topic": "\(topic)"]
        if let apnsID { metadata["apns.id"] = "\(apnsID)" }
        return metadata
    }

    /// The device token of a `/3/device/<token>` path.
    static func device(inPath path: String) -> String? {
        let prefix = Device.pathPrefix
        guard path.hasPrefix(prefix) else { return nil }
        return String(path.dropFirst(prefix.count))
    }
}
