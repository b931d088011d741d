// The common wrong-connector and wrong-target mistakes get a diagnostic that says the fix. Without
// these, a widget push through a certificate connector reports "no exact matches in call to global
// function 'send'" with notes about `Via.Authentication`, or a conformance the reader never wrote.
// None of them can be called: each is unavailable, so the compiler picks an available overload
// whenever one fits and names one of these only when none does.
//
// Which push type takes which authentication, and what may go to a channel, is the push types'
// rules (TokenDeliverable, CertificateDeliverable, BroadcastDeliverable), read here only through
// those protocols.

/// Unavailable: the push type takes token authentication only.
@available(
    *, unavailable,
    message: "this push type takes token authentication only: send it through a TokenConnector or AnyConnector"
)
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == CertificateAuthentication {
    throw .validation(.authenticationNotAllowed(pushType: Notification.pushType, method: .certificate))
}

/// Unavailable: the push type takes certificate authentication only.
@available(
    *, unavailable,
    message: "this push type takes certificate authentication only: send it through a CertificateConnector"
)
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector>(
    _ notification: Notification, via connector: Via, to device: Device, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse where Via.Authentication == TokenAuthentication {
    throw .validation(.authenticationNotAllowed(pushType: Notification.pushType, method: .token))
}

/// Unavailable: the push type takes token authentication only.
@available(
    *, unavailable,
    message: "this push type takes token authentication only: send it through a TokenConnector or AnyConnector"
)
@discardableResult
public func send<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary
where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    throw .validation(.authenticationNotAllowed(pushType: Notification.pushType, method: .certificate))
}

/// Unavailable: the push type takes certificate authentication only.
@available(
    *, unavailable,
    message: "this push type takes certificate authentication only: send it through a CertificateConnector"
)
@discardableResult
public func send<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, onOutcome: (BulkOutcome) async -> Void = { _ in }
) async throws(APNsError) -> BulkSendSummary
where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    throw .validation(.authenticationNotAllowed(pushType: Notification.pushType, method: .token))
}

/// Unavailable: only Live Activity updates and ends go to a broadcast channel.
@available(
    *, unavailable,
    message: "only Live Activity updates and ends go to a broadcast channel: send this to a Device"
)
@discardableResult
public func send<Notification: PushNotification, Via: Connector>(
    _ notification: Notification, via connector: Via, to channel: BroadcastChannel, timeout: Duration? = nil,
    retry: RetryPolicy = .none
) async throws(APNsError) -> APNsResponse {
    throw .validation(.notBroadcastable(Notification.pushType))
}

/// Unavailable: the push type takes token authentication only.
@available(
    *, unavailable,
    message: "this push type takes token authentication only: send it through a TokenConnector or AnyConnector"
)
public func bulkSendOutcomes<Notification: TokenDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults
where Via.Authentication == CertificateAuthentication, Devices.Element == Device {
    throw .validation(.authenticationNotAllowed(pushType: Notification.pushType, method: .certificate))
}

/// Unavailable: the push type takes certificate authentication only.
@available(
    *, unavailable,
    message: "this push type takes certificate authentication only: send it through a CertificateConnector"
)
public func bulkSendOutcomes<Notification: CertificateDeliverable, Via: Connector, Devices: Sequence & Sendable>(
    _ notification: Notification, via connector: Via, to devices: Devices, maximumInFlight: Int? = nil,
    timeout: Duration? = nil, retry: RetryPolicy = .none, apnsID: (@Sendable (Device) -> APNsID)? = nil
) throws(APNsError) -> BulkSendResults
where Via.Authentication == TokenAuthentication, Devices.Element == Device {
    throw .validation(.authenticationNotAllowed(pushType: Notification.pushType, method: .token))
}
