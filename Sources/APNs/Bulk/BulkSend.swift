/// Sends one notification to many devices through a token connector, multiplexed on the
/// connector's connection, and returns when every device has its outcome.
///
/// The payload is serialised once and each device gets its own request (no apns-id: APNs assigns
/// each push one and returns it in its outcome). `onOutcome` sees each device's ``BulkOutcome``
/// as its answer arrives, one at a time; while it runs, sending pauses once `maximumInFlight`
/// requests are waiting, so memory stays flat for any number of devices. Cancelling the calling
/// task stops the send: requests in flight are cancelled and devices not yet started are not sent
/// to (the summary says ``BulkSendSummary/cancelled``).
///
/// ```swift
/// let summary = try await send(notification, via: connector, to: devices) { outcome in
///     if outcome.rejection?.reason == .unregistered { await forget(outcome.device) }
/// }
/// print(summary)
/// ```
/// To read outcomes as an `AsyncSequence` instead, use `bulkSendOutcomes(_:via:to:)`.
/// - Parameters:
///   - notification: What to send to every device; serialised once, checked before anything is sent.
///   - connector: A token connector (or a recording connector standing in for one).
///   - devices: The device tokens, in any `Sequence`; read lazily, as sending progresses.
///   - maximumInFlight: Requests started and not yet handed to `onOutcome`, at most; by default
///     the connector's ``Connector/concurrencyLimit`` plus a small reserve queued in the connector
///     (two refill batches: 12 for 100 streams, 64 from 512 on), so a stream that frees takes the
///     next request at once. Their deadlines run while they wait, so when a connection stalls they
///     may time out with the requests written to it (as not sent: they were not). Passing the
///     concurrency limit itself keeps nothing queued: each stream an answer frees then waits for
///     the reader to take that outcome and the producer to start the next request, which far from
///     APNs leaves streams empty for milliseconds every cycle (<doc:BulkSends>).
///   - timeout: Each device's deadline, counted from when its request is started, retries
///     included; nil uses the connector's `TransportConfiguration.requestTimeout`.
///   - retry: When a device's send tries again on its own (``RetryPolicy``); none by default.
///   - isolation: Where the outcomes are read and `onOutcome` runs: by default the caller's actor,
///     so an `onOutcome` written in main-actor or actor code uses that actor's state and costs no
///     hop per outcome (<doc:BulkSends>).
///   - onOutcome: Called once per device, in the order answers arrive.
/// - Returns: The outcomes, counted.
/// - Throws: ``APNsError/validation(_:)`` before anything is sent if the notification or an
///   option is invalid, including ``APNsValidationError/apnsIDInBulkSend``. Per-device failures
///   are outcomes, never thrown.
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil,
    retry: RetryPolicy = .none, isolation: isolated (any Actor)? = #isolation,
    onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary
where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    await BulkSendResults.drain(
        try BulkSendResults(
            notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry),
        isolation: isolation, into: onOutcome)
}

/// Sends one notification to many devices through a certificate connector; see the token variant.
///
/// ```swift
/// let summary = try await send(notification, via: certificateConnector, to: devices)
/// ```
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil,
    retry: RetryPolicy = .none, isolation: isolated (any Actor)? = #isolation,
    onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary
where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    await BulkSendResults.drain(
        try BulkSendResults(
            notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry),
        isolation: isolation, into: onOutcome)
}

/// Sends one notification to many devices through a connector chosen at run time; the push
/// type's rules for its authentication are checked before anything is sent. See the token variant.
@discardableResult
public func send<Notification: PushNotification, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: AnyConnector, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, isolation: isolated (any Actor)? = #isolation,
    onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary where Devices.Element == Device {
    await BulkSendResults.drain(
        try BulkSendResults(
            notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry),
        isolation: isolation, into: onOutcome)
}

/// The outcomes of sending one notification to many devices through a token connector, as an
/// `AsyncSequence` to iterate once: **nothing is sent until iteration starts**, and sending then
/// follows the reader's pace.
///
/// Use it when outcomes feed another asynchronous pipeline or the reader wants to stop early
/// (leaving the loop cancels the rest); otherwise the bulk `send(_:via:to:)`, which returns a
/// ``BulkSendSummary``, is simpler and cannot be left unread.
///
/// ```swift
/// for try await outcome in try bulkSendOutcomes(notification, via: connector, to: devices) {
///     if outcome.rejection?.reason == .unregistered { await forget(outcome.device) }
/// }
/// ```
///
/// `apnsID` gives each device's request its own apns-id (a notification sent in bulk may not set
/// one): derive it from your own records, and a send repeated after a crash carries the same id,
/// so it can be recognised in APNs' answers and your logs.
///
/// ```swift
/// let results = try bulkSendOutcomes(notification, via: connector, to: devices, apnsID: { device in
///     ids[device] ?? APNsID()   // e.g. stored beside the device row when the send was queued
/// })
/// ```
/// - Throws: ``APNsError/validation(_:)`` at once if the notification or an option is invalid
///   (nothing is sent).
public func bulkSendOutcomes<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
        timeout: timeout,
        retry: retry, apnsID: apnsID)
}

/// The outcomes of sending one notification to many devices through a certificate connector; see
/// the token variant.
public func bulkSendOutcomes<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults
where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
        timeout: timeout,
        retry: retry, apnsID: apnsID)
}

/// The outcomes of sending one notification to many devices through a connector chosen at run
/// time; see the token variant.
public func bulkSendOutcomes<Notification: PushNotification, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: AnyConnector, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults where Devices.Element == Device {
    try BulkSendResults(
        notification: notification, connector: connector, devices: devices, maximumInFlight: maximumInFlight,
        timeout: timeout,
        retry: retry, apnsID: apnsID)
}

/// The outcomes of sending an already-built request to many devices (each gets the request with its
/// own path), for the `apns` tool, which builds requests from command-line flags and files.
///
/// SPI: no compile-time rules; ``APNsRequest/checkRules(for:)`` applies as on every send.
@_spi(RawRequests)
public func bulkSendOutcomes<Devices: Sequence & Sendable>(
    request template: APNsRequest, via connector: some Connector, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none
) throws(APNsError) -> BulkSendResults where Devices.Element == Device {
    try BulkSendResults(
        template: template, connector: connector, devices: devices, maximumInFlight: maximumInFlight, timeout: timeout,
        retry: retry)
}
