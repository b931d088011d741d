import APNs
import Vapor

// Each send mirrors the library's `send(_:via:to:)`, with the connector named by an
// `APNsConnectorID`: the same generic constraints, so the compiler refuses the same misuse.

extension Application.APNs {
    /// Sends `notification` to `device` through the token connector `id`.
    ///
    /// ```swift
    /// try await req.apns.send(WidgetNotification(bundleID: "com.example.weather"), via: .weather, to: device)
    /// ```
    /// - Throws: `APNsError` as the library's `send(_:via:to:)` does; ``APNsConfigurationError``
    ///   (not sent) when `id` is not registered.
    @discardableResult
    public func send<Notification: TokenDeliverable>(
        _ notification: Notification, via id: APNsConnectorID<TokenAuthentication>, to device: Device,
        timeout: Duration? = nil, retry: RetryPolicy = .none
    ) async throws -> APNsResponse {
        try await APNs.send(notification, via: registry.connector(id), to: device, timeout: timeout, retry: retry)
    }

    /// Sends `notification` to `device` through the certificate connector `id`.
    @discardableResult
    public func send<Notification: CertificateDeliverable>(
        _ notification: Notification, via id: APNsConnectorID<CertificateAuthentication>, to device: Device,
        timeout: Duration? = nil, retry: RetryPolicy = .none
    ) async throws -> APNsResponse {
        try await APNs.send(notification, via: registry.connector(id), to: device, timeout: timeout, retry: retry)
    }

    /// Sends `notification` to `device` through the connector `id`, chosen at run time: the push
    /// type's rules for its authentication are checked before any I/O.
    @discardableResult
    public func send<Notification: PushNotification>(
        _ notification: Notification, via id: APNsConnectorID<RunTimeAuthentication>, to device: Device,
        timeout: Duration? = nil, retry: RetryPolicy = .none
    ) async throws -> APNsResponse {
        try await APNs.send(
            notification, via: AnyConnector(registry.connector(id)), to: device, timeout: timeout, retry: retry)
    }

    /// Sends `notification` to `device` through the default token connector (the only kind a
    /// token-only push type — widgets, controls, location, file provider — accepts).
    @discardableResult
    public func send<Notification: TokenDeliverable>(
        _ notification: Notification, to device: Device, timeout: Duration? = nil, retry: RetryPolicy = .none
    ) async throws -> APNsResponse {
        try await send(
            notification, via: APNsConnectorID<TokenAuthentication>.default, to: device, timeout: timeout, retry: retry)
    }

    /// Sends `notification` to `device` through the default certificate connector (the only kind
    /// MDM accepts).
    @discardableResult
    public func send<Notification: CertificateDeliverable>(
        _ notification: Notification, to device: Device, timeout: Duration? = nil, retry: RetryPolicy = .none
    ) async throws -> APNsResponse {
        try await send(
            notification, via: APNsConnectorID<CertificateAuthentication>.default, to: device, timeout: timeout,
            retry: retry)
    }

    /// Sends `notification` to `device` through a default connector: the token one if registered,
    /// else the certificate one.
    ///
    /// ```swift
    /// try await req.apns.send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, to: device)
    /// ```
    @discardableResult
    public func send<Notification: TokenDeliverable & CertificateDeliverable>(
        _ notification: Notification, to device: Device, timeout: Duration? = nil, retry: RetryPolicy = .none
    ) async throws -> APNsResponse {
        switch try registry.defaultConnector() {
        case .token(let connector):
            try await APNs.send(notification, via: connector, to: device, timeout: timeout, retry: retry)
        case .certificate(let connector):
            try await APNs.send(notification, via: connector, to: device, timeout: timeout, retry: retry)
        }
    }

    // MARK: Many devices

    /// Sends `notification` to every device through the token connector `id`, multiplexed, and
    /// returns when each has exactly one outcome (the library's bulk `send(_:via:to:)`). Outcomes
    /// are read, and `onOutcome` runs, on the caller's actor (`isolation`), as in the library: an
    /// `onOutcome` written in an actor's method uses its state, with no hop per outcome.
    ///
    /// ```swift
    /// extension APNsConnectorID<TokenAuthentication> {
    ///     static let marketing = APNsConnectorID("marketing")
    /// }
    ///
    /// let summary = try await req.apns.send(notification, via: .marketing, to: devices) { outcome in
    ///     if outcome.rejection?.reason == .unregistered { await tokens.remove(outcome.device) }
    /// }
    /// ```
    @discardableResult
    public func send<Notification: TokenDeliverable, Devices: Sequence & Sendable>(
        _ notification: Notification, via id: APNsConnectorID<TokenAuthentication>, to devices: Devices,
        maximumInFlight: Int? = nil, timeout: Duration? = nil, retry: RetryPolicy = .none,
        isolation: isolated (any Actor)? = #isolation, onOutcome: (BulkOutcome) async -> Void = { _ in }
    ) async throws -> BulkSendSummary where Devices.Element == Device {
        try await APNs.send(
            notification, via: registry.connector(id), to: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry, isolation: isolation, onOutcome: onOutcome)
    }

    /// Sends `notification` to every device through the certificate connector `id`.
    @discardableResult
    public func send<Notification: CertificateDeliverable, Devices: Sequence & Sendable>(
        _ notification: Notification, via id: APNsConnectorID<CertificateAuthentication>, to devices: Devices,
        maximumInFlight: Int? = nil, timeout: Duration? = nil, retry: RetryPolicy = .none,
        isolation: isolated (any Actor)? = #isolation, onOutcome: (BulkOutcome) async -> Void = { _ in }
    ) async throws -> BulkSendSummary where Devices.Element == Device {
        try await APNs.send(
            notification, via: registry.connector(id), to: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry, isolation: isolation, onOutcome: onOutcome)
    }

    /// Sends `notification` to every device through the connector `id`, chosen at run time.
    @discardableResult
    public func send<Notification: PushNotification, Devices: Sequence & Sendable>(
        _ notification: Notification, via id: APNsConnectorID<RunTimeAuthentication>, to devices: Devices,
        maximumInFlight: Int? = nil, timeout: Duration? = nil, retry: RetryPolicy = .none,
        isolation: isolated (any Actor)? = #isolation, onOutcome: (BulkOutcome) async -> Void = { _ in }
    ) async throws -> BulkSendSummary where Devices.Element == Device {
        try await APNs.send(
            notification, via: AnyConnector(registry.connector(id)), to: devices, maximumInFlight: maximumInFlight,
            timeout: timeout, retry: retry, isolation: isolation, onOutcome: onOutcome)
    }

    /// Sends `notification` to every device through the default token connector.
    @discardableResult
    public func send<Notification: TokenDeliverable, Devices: Sequence & Sendable>(
        _ notification: Notification, to devices: Devices, maximumInFlight: Int? = nil, timeout: Duration? = nil,
        retry: RetryPolicy = .none, isolation: isolated (any Actor)? = #isolation,
        onOutcome: (BulkOutcome) async -> Void = { _ in }
    ) async throws -> BulkSendSummary where Devices.Element == Device {
        try await send(
            notification, via: APNsConnectorID<TokenAuthentication>.default, to: devices,
            maximumInFlight: maximumInFlight, timeout: timeout, retry: retry, isolation: isolation, onOutcome: onOutcome
        )
    }

    /// Sends `notification` to every device through the default certificate connector.
    @discardableResult
    public func send<Notification: CertificateDeliverable, Devices: Sequence & Sendable>(
        _ notification: Notification, to devices: Devices, maximumInFlight: Int? = nil, timeout: Duration? = nil,
        retry: RetryPolicy = .none, isolation: isolated (any Actor)? = #isolation,
        onOutcome: (BulkOutcome) async -> Void = { _ in }
    ) async throws -> BulkSendSummary where Devices.Element == Device {
        try await send(
            notification, via: APNsConnectorID<CertificateAuthentication>.default, to: devices,
            maximumInFlight: maximumInFlight, timeout: timeout, retry: retry, isolation: isolation, onOutcome: onOutcome
        )
    }

    /// Sends `notification` to every device through a default connector: the token one if
    /// registered, else the certificate one.
    ///
    /// ```swift
    /// let summary = try await req.apns.send(notification, to: devices)
    /// ```
    @discardableResult
    public func send<Notification: TokenDeliverable & CertificateDeliverable, Devices: Sequence & Sendable>(
        _ notification: Notification, to devices: Devices, maximumInFlight: Int? = nil, timeout: Duration? = nil,
        retry: RetryPolicy = .none, isolation: isolated (any Actor)? = #isolation,
        onOutcome: (BulkOutcome) async -> Void = { _ in }
    ) async throws -> BulkSendSummary where Devices.Element == Device {
        switch try registry.defaultConnector() {
        case .token(let connector):
            try await APNs.send(
                notification, via: connector, to: devices, maximumInFlight: maximumInFlight, timeout: timeout,
                retry: retry, isolation: isolation, onOutcome: onOutcome)
        case .certificate(let connector):
            try await APNs.send(
                notification, via: connector, to: devices, maximumInFlight: maximumInFlight, timeout: timeout,
                retry: retry, isolation: isolation, onOutcome: onOutcome)
        }
    }
}
