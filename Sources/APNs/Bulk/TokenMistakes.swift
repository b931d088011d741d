import Foundation

// Common mistakes get a diagnostic that says what to do: a token (a `String` or `Data`), or a
// sequence of them, where a `Device` or devices belong. Without these, the compiler reports the
// mismatch against a bulk send's generic constraints ("requires the types 'Character' and 'Device'
// be equivalent") or fails to produce a diagnostic at all. None of them can be called.

/// Unavailable: a device is a ``Device``, made from its token once.
@available(
    *, unavailable,
    message: "send to a Device, not a token: let device = try Device(token: hex) (or Device(tokenBytes: data))"
)
public func send<Notification: PushNotification, Via: Connector>(
    _ notification: Notification, via connector: Via, to token: String, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    throw .validation(.invalidDeviceToken("pass a Device"))
}

/// Unavailable: a device is a ``Device``, made from its token once.
@available(
    *, unavailable,
    message: "send to a Device, not a token: let device = try Device(tokenBytes: data) (or Device(token: hex))"
)
public func send<Notification: PushNotification, Via: Connector>(
    _ notification: Notification, via connector: Via, to token: Data, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    throw .validation(.invalidDeviceToken("pass a Device"))
}

/// Unavailable: a bulk send takes ``Device`` values.
@available(
    *, unavailable,
    message: "a bulk send takes Devices, not tokens: map them first, tokens.map { try Device(token: $0) }"
)
public func send<Notification: PushNotification, Via: Connector, Tokens: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to tokens: Tokens, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary where Tokens.Element == String {
    throw .validation(.invalidDeviceToken("pass Devices"))
}

/// Unavailable: a bulk send takes ``Device`` values.
@available(
    *, unavailable,
    message: "a bulk send takes Devices, not tokens: map them first, tokens.map { try Device(tokenBytes: $0) }"
)
public func send<Notification: PushNotification, Via: Connector, Tokens: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to tokens: Tokens, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary where Tokens.Element == Data {
    throw .validation(.invalidDeviceToken("pass Devices"))
}

/// Unavailable: a bulk send takes ``Device`` values.
@available(
    *, unavailable,
    message: "a bulk send takes Devices, not tokens: map them first, tokens.map { try Device(token: $0) }"
)
public func bulkSendOutcomes<Notification: PushNotification, Via: Connector, Tokens: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to tokens: Tokens, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults where Tokens.Element == String {
    throw .validation(.invalidDeviceToken("pass Devices"))
}

/// Unavailable: a bulk send takes ``Device`` values.
@available(
    *, unavailable,
    message: "a bulk send takes Devices, not tokens: map them first, tokens.map { try Device(tokenBytes: $0) }"
)
public func bulkSendOutcomes<Notification: PushNotification, Via: Connector, Tokens: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to tokens: Tokens, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults where Tokens.Element == Data {
    throw .validation(.invalidDeviceToken("pass Devices"))
}
