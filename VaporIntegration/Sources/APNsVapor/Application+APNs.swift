import APNs
import Vapor

extension Application {
    /// The application's APNs connectors: register them at start-up, send through them from routes
    /// (`req.apns` is the same), and they shut down with the application.
    ///
    /// ```swift
    /// // configure.swift
    /// try app.apns.use(
    ///     TokenConnector(
    ///         teamID: "DEF123GHIJ", keyID: "ABC123DEFG", key: .file(path: "/run/secrets/AuthKey_ABC123DEFG.p8"),
    ///         environment: .production, logger: app.logger))
    ///
    /// // routes.swift
    /// app.post("orders", ":id", "shipped") { req async throws -> HTTPStatus in
    ///     let device = try Device(token: try req.content.get(String.self, at: "token"))
    ///     try await req.apns.send(
    ///         AlertNotification(bundleID: "com.example.shop") { Alert("Your order shipped") }, to: device)
    ///     return .accepted
    /// }
    /// ```
    public var apns: APNs {
        APNs(application: self)
    }

    /// The application's APNs connectors, by ``APNsConnectorID``.
    ///
    /// - A send compiles only when its push type accepts the connector's authentication: a widget
    ///   push through a certificate connector is a compile error here too. A send without `via:`
    ///   takes the default connector its push type accepts (the token one first, for push types that
    ///   accept both).
    /// - Connectors registered here belong to the application: it shuts them down when it shuts
    ///   down, letting sends in flight finish within ``shutdownGracePeriod``.
    /// - Sends throw the library's `APNsError` (an `AbortError` here, so a route that lets it
    ///   through answers with a fitting status), or ``APNsConfigurationError`` before anything is
    ///   sent when the connector is not registered.
    ///
    /// Thread safety: `Sendable`; register from `configure` before the application starts, send
    /// from any number of requests at once.
    public struct APNs: Sendable {
        let application: Application

        struct Key: StorageKey, LockKey {
            typealias Value = APNsRegistry
        }

        var registry: APNsRegistry {
            if let registry = application.storage[Key.self] { return registry }
            // Vapor clears its storage when it shuts down: sends after that are refused as such.
            if application.didShutdown { return APNsRegistry.shutDown }
            return application.locks.lock(for: Key.self).withLock {
                if let registry = application.storage[Key.self] { return registry }
                let registry = APNsRegistry()
                application.storage[Key.self] = registry
                application.lifecycle.use(APNsLifecycle(registry: registry))
                return registry
            }
        }

        /// Registers `connector` under `id` (the default of its authentication unless named), for
        /// the application's lifetime.
        /// - Throws: ``APNsConfigurationError`` when `id` is taken or the application has shut down.
        public func use<A: AuthenticationKind>(
            _ connector: some Connector<A>, as id: APNsConnectorID<A> = .default
        )
            throws
        {
            try registry.register(connector, as: id)
        }

        /// The connector registered under `id`, to pass to the library's own functions
        /// (`bulkSendOutcomes`, broadcast channels, `connector.taskExecutor`).
        /// - Throws: ``APNsConfigurationError`` when there is none.
        public func connector<A: AuthenticationKind>(_ id: APNsConnectorID<A> = .default) throws -> any Connector<A> {
            try registry.connector(id)
        }

        /// How long sends in flight may take to finish when the application shuts down (10 s by
        /// default); sends still running then fail with `TransportError` kind `shut-down`.
        public var shutdownGracePeriod: Duration {
            get { registry.gracePeriod }
            nonmutating set { registry.gracePeriod = newValue }
        }

        /// Shuts the connectors down now, as the application does when it stops.
        public func shutdown() async {
            await registry.shutdown()
        }
    }
}

extension Request {
    /// The application's APNs connectors (``Vapor/Application/APNs``).
    ///
    /// ```swift
    /// try await req.apns.send(notification, to: device)
    /// ```
    public var apns: Application.APNs {
        application.apns
    }
}
