import Tracing

/// Sends a notification to a device through a token connector.
///
/// Compiles only when the push type accepts token authentication (every type but MDM).
///
/// ```swift
/// let response = try await send(
///     AlertNotification(bundleID: "com.example.app") { Alert("Hello") },
///     via: connector, to: try Device(token: deviceToken), timeout: .seconds(5))
/// print(response.apnsID)
/// ```
/// - Parameters:
///   - notification: What to send; its request is built and checked before any I/O.
///   - connector: A token connector (or a recording connector standing in for one).
///   - device: The device token to send to.
///   - timeout: How long the send may take from now, retries included, however long it waits for a
///     connection or a free stream; nil uses the connector's `TransportConfiguration.requestTimeout`.
///   - retry: When to try again on its own (``RetryPolicy``); none by default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError``: ``APNsError/validation(_:)`` before any I/O; ``APNsError/rejected(_:)``
///   when APNs refuses; ``APNsError/transport(_:)`` when no answer came back (its delivery says
///   whether the notification may have been delivered), including cancellation and timeout.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.validatedRequest(to: device)
    }
}

/// Sends a notification to a device through a certificate connector.
///
/// Compiles only when the push type accepts certificate authentication (not location,
/// fileprovider, widgets or controls).
///
/// ```swift
/// try await send(BackgroundNotification(bundleID: "com.example.app"), via: certificateConnector, to: device)
/// ```
/// - Parameters:
///   - notification: What to send; its request is built and checked before any I/O.
///   - connector: A certificate connector (or a recording connector standing in for one).
///   - device: The device token to send to.
///   - timeout: How long the send may take from now, retries included; nil uses the connector's
///     default.
///   - retry: When to try again on its own (``RetryPolicy``); none by default.
/// - Returns: APNs' acceptance: status, `apns-id`, and `apns-unique-id` when present.
/// - Throws: ``APNsError`` (see the token variant).
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.validatedRequest(to: device)
    }
}

/// Sends a notification to a device through a connector chosen at run time.
///
/// The push type's rules for the wrapped connector's authentication are checked before any I/O.
///
/// ```swift
/// let connector = AnyConnector(try makeConnectorFromConfiguration())
/// try await send(BackgroundNotification(bundleID: "com.example.app"), via: connector, to: device)
/// ```
/// - Throws: ``APNsError``; ``APNsValidationError/authenticationNotAllowed(pushType:method:)``
///   when the push type does not accept the connector's authentication (nothing is sent).
@discardableResult
public func send<Notification: PushNotification>(
    _ notification: Notification, via connector: AnyConnector, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    try await deliver(Notification.pushType, via: connector, timeout: timeout, retry: retry) {
        () throws(APNsValidationError) in
        try notification.validatedRequest(to: device)
    }
}

/// Builds the request, checks it against its push type's rules for the connector's
/// authentication, performs it within the deadline (retrying as the policy allows) and interprets
/// the answer: the one path every single send shares. Every failure leaves as an ``APNsError``;
/// one refused before any I/O is counted and logged as a refusal (`pushType` names it when the
/// request could not be built).
@inline(__always)  // one async frame for the levels of a send, not one each (see deliver)
func deliver(
    _ pushType: PushType?, via connector: some Connector, timeout: Duration?, retry: RetryPolicy = .none,
    request build: () throws(APNsValidationError) -> APNsRequest
) async throws(APNsError) -> APNsResponse {
    // Every send in flight keeps its async frames until it ends, so they are kept small: building,
    // checking, logging and counting run out of line (their temporaries live on the thread's
    // stack), and `deliver`, `attempt` and `exchange` are inlined into one frame
    // (Docs/Benchmarking.md, "Smaller async frames").
    let send = try SingleSend.prepare(pushType, via: connector, timeout: timeout, retry: retry, request: build)
    let (result, attempts) = await attempt(
        send.request, via: connector, engine: send.engine, deadline: send.deadline, retry: retry)
    send.finish(result: result, attempts: attempts)
    return try result.get()
}

/// One single send between its preparation and its end: what ``deliver(_:via:timeout:retry:request:)``
/// keeps while it waits.
///
/// Thread safety: a value that one task creates and uses; not shared.
struct SingleSend {
    let request: APNsRequest
    let engine: ConnectorEngine?
    let deadline: ContinuousClock.Instant?
    let observability: Observability
    let summary: RequestSummary
    let span: (any Span)?
    let started: ContinuousClock.Instant

    /// Builds and checks the request, starts its span, and counts and logs its start; a request
    /// refused before any I/O is counted and logged as a refusal.
    @inline(never)
    static func prepare(
        _ pushType: PushType?, via connector: some Connector, timeout: Duration?, retry: RetryPolicy,
        request build: () throws(APNsValidationError) -> APNsRequest
    ) throws(APNsError) -> SingleSend {
        let engine = APNs.engine(of: connector)
        let request: APNsRequest
        let deadline: ContinuousClock.Instant?
        do throws(APNsError) {
            try retry.validate()
            try TransportConfiguration.validate(sendTimeout: timeout)
            deadline = SendDeadline.of(
                timeout: timeout, from: engine?.clock.now ?? .now, engine: engine, retry: retry)
            do { request = try build() } catch { throw .validation(error) }
            try checkBeforeSending(request, via: connector, engine: engine)
        } catch {
            engine?.observability.recordRefusal(pushType: pushType?.rawValue ?? "none", error: error)
            throw error
        }
        let observability = engine?.observability ?? .spansOnly
        let summary = RequestSummary(request)
        let span = observability.startSpan("apns.send", summary: summary)
        if observability.isEnabled {
            observability.sendsInFlight.increment()
            if observability.logger.logLevel <= .trace {
                var metadata = summary.metadata
                if let device = RequestSummary.device(inPath: request.path) {
                    metadata["apns.device_token"] = "\(device)"
                }
                observability.logger.trace("Sending APNs push", metadata: metadata)
            }
        }
        return SingleSend(
            request: request, engine: engine, deadline: deadline, observability: observability, summary: summary,
            span: span, started: .now)
    }

    /// Counts, logs and traces the send's end.
    @inline(never)
    func finish(result: Result<APNsResponse, APNsError>, attempts: Int) {
        let duration = ContinuousClock.now - started
        if observability.isEnabled {
            observability.sendsInFlight.decrement()
            observability.recordSend(pushType: summary.pushType, result: result, duration: duration)
            observability.retried(.policy, times: attempts - 1)
            observability.logSend(
                summary, result: result, duration: duration, attempts: attempts,
                device: RequestSummary.device(inPath: request.path))
        }
        Observability.endSpan(span, result: result, attempts: attempts)
    }
}

/// The engine behind `connector` when it is one of swift-apns' own (directly or inside an
/// ``AnyConnector``); nil for any other (a recording connector, yours).
func engine(of connector: some Connector) -> ConnectorEngine? {
    if let any = connector as? AnyConnector { return any.engine }
    return (connector as? any TransportConnector)?.engine
}

/// Performs `request`, and again while `retry` allows and the deadline leaves room. APNs' answer
/// is interpreted once, as it arrives (a retryable rejection's last one included); a failure is an
/// ``APNsError``. The request's rules have been checked.
/// Returns the last result and the number of attempts made.
@inline(__always)  // one async frame for the levels of a send, not one each (see deliver)
func attempt(
    _ request: APNsRequest, via connector: some Connector, engine: ConnectorEngine?,
    deadline: ContinuousClock.Instant?,
    retry: RetryPolicy
) async -> (Result<APNsResponse, APNsError>, attempts: Int) {
    let clock = engine?.clock ?? ContinuousWaitClock.shared
    var attempt = 1
    while true {
        let result: Result<APNsResponse, APNsError>
        do {
            result = try await exchange(checked: request, via: connector, engine: engine, deadline: deadline)
                .answer.mapError(APNsError.rejected)
        } catch {
            result = .failure(error)
        }
        guard case .failure(let failure) = result,
            let delay = retry.wait(after: failure, attempt: attempt, deadline: deadline, now: clock.now)
        else { return (result, attempt) }
        if let ending = await RetryPolicy.waitToRetry(after: delay, failure: failure, on: clock) {
            return (.failure(ending), attempt)
        }
        attempt += 1
    }
}

/// What every send path checks before any I/O: the request against its push type's rules for the
/// connector's authentication (an ``AnyConnector``'s, checked at run time), then against what the
/// credential of swift-apns' own connector covers.
func checkBeforeSending(
    _ request: APNsRequest, via connector: some Connector, engine: ConnectorEngine?
) throws(APNsError) {
    do { try request.checkRules(for: connector.authenticationMethod) } catch { throw .validation(error) }
    try engine?.checkCredential(for: request)
}

/// Performs a request whose rules are checked and reads the answer once, turning whatever the
/// connector throws into an ``APNsError``. A connector's own `perform` is called only when it is
/// not one of swift-apns' (their engine takes checked requests without checking again).
@inline(__always)  // one async frame for the levels of a send, not one each (see deliver)
func exchange(
    checked request: APNsRequest, via connector: some Connector, engine: ConnectorEngine?,
    deadline: ContinuousClock.Instant?
) async throws(APNsError) -> Exchange {
    do {
        if let engine {
            let deadline = deadline ?? SendDeadline.of(timeout: nil, from: engine.clock.now, engine: engine)
            return try await engine.exchange(checked: request, deadline: deadline)
        }
        if let deadline { return Exchange(try await connector.perform(request, deadline: deadline)) }
        return Exchange(try await connector.perform(request))
    } catch {
        throw APNsError(wrapping: error)
    }
}

/// Sends an already-built request through the one send path (deadline, retries, interpretation),
/// for the `apns` tool, which builds requests from command-line flags and files.
///
/// SPI: this has no compile-time rules (which push type may use which connector); the run-time
/// check of ``APNsRequest/checkRules(for:)`` applies as on every send.
@_spi(RawRequests)
public func send(
    request: APNsRequest, via connector: some Connector, timeout: Duration? = nil, retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    try await deliver(nil, via: connector, timeout: timeout, retry: retry) { () throws(APNsValidationError) in request }
}
