import APNs
import Synchronization
import Vapor

/// The connectors of one application, by name and authentication, and whether they were shut down.
///
/// Thread safety: `Sendable`; its state is behind a `Mutex`, held only to read or change the table,
/// never across a send or a shutdown.
final class APNsRegistry: Sendable {
    struct Key: Hashable, Sendable {
        let name: String
        let authentication: ObjectIdentifier
    }

    private struct State {
        var connectors: [Key: any Connector] = [:]
        /// Registration order, to shut down in reverse.
        var order: [Key] = []
        var isShutDown = false
        var gracePeriod: Duration = .seconds(10)
    }

    private let state = Mutex(State())

    /// The registry of every application that has shut down: empty, refusing every send.
    static let shutDown: APNsRegistry = {
        let registry = APNsRegistry()
        registry.state.withLock { $0.isShutDown = true }
        return registry
    }()

    func register<A: AuthenticationKind>(_ connector: some Connector<A>, as id: APNsConnectorID<A>) throws {
        let key = Key(name: id.name, authentication: ObjectIdentifier(A.self))
        try state.withLock { state throws(APNsConfigurationError) in
            guard !state.isShutDown else {
                throw APNsConfigurationError(
                    .shutDown, "app.apns has shut down: register connectors before the application starts")
            }
            guard state.connectors[key] == nil else {
                throw APNsConfigurationError(
                    .alreadyRegistered,
                    "app.apns already has a connector \(id): give the second one another APNsConnectorID")
            }
            state.connectors[key] = connector
            state.order.append(key)
        }
    }

    func connector<A: AuthenticationKind>(_ id: APNsConnectorID<A>) throws -> any Connector<A> {
        let key = Key(name: id.name, authentication: ObjectIdentifier(A.self))
        return try state.withLock { state throws(APNsConfigurationError) in
            guard !state.isShutDown else {
                throw APNsConfigurationError(.shutDown, "app.apns has shut down its connectors: nothing was sent")
            }
            guard let connector = state.connectors[key] as? any Connector<A> else { throw .notRegistered(id) }
            return connector
        }
    }

    /// The default connector of a push type that takes either authentication.
    enum DefaultConnector {
        case token(any Connector<TokenAuthentication>)
        case certificate(any Connector<CertificateAuthentication>)
    }

    /// The default token connector if one is registered, else the default certificate connector,
    /// found under one lock.
    func defaultConnector() throws -> DefaultConnector {
        let token = APNsConnectorID<TokenAuthentication>.default
        let certificate = APNsConnectorID<CertificateAuthentication>.default
        return try state.withLock { state throws(APNsConfigurationError) in
            guard !state.isShutDown else {
                throw APNsConfigurationError(.shutDown, "app.apns has shut down its connectors: nothing was sent")
            }
            if let connector = state.connectors[
                Key(name: token.name, authentication: ObjectIdentifier(TokenAuthentication.self))]
                as? any Connector<TokenAuthentication>
            {
                return .token(connector)
            }
            if let connector = state.connectors[
                Key(name: certificate.name, authentication: ObjectIdentifier(CertificateAuthentication.self))]
                as? any Connector<CertificateAuthentication>
            {
                return .certificate(connector)
            }
            throw .notRegistered(token)
        }
    }

    var gracePeriod: Duration {
        get { state.withLock { $0.gracePeriod } }
        set { state.withLock { $0.gracePeriod = newValue } }
    }

    /// Stops taking sends and shuts every swift-apns connector down, in reverse order of
    /// registration, letting sends in flight finish within the grace period; the connectors shut
    /// down together, so the whole takes at most one grace period. Runs once.
    func shutdown() async {
        let (connectors, gracePeriod) = state.withLock { state -> ([any Connector], Duration) in
            guard !state.isShutDown else { return ([], .zero) }
            state.isShutDown = true
            let connectors = state.order.reversed().compactMap { state.connectors[$0] }
            state.connectors = [:]
            return (connectors, state.gracePeriod)
        }
        await withTaskGroup(of: Void.self) { group in
            for connector in connectors {
                group.addTask { await Self.shutdown(connector, gracePeriod: gracePeriod) }
            }
        }
    }

    private static func shutdown(_ connector: any Connector, gracePeriod: Duration) async {
        if let connector = connector as? any TransportConnector {
            await connector.shutdown(gracePeriod: gracePeriod)
        } else if let connector = connector as? AnyConnector {
            await connector.shutdown(gracePeriod: gracePeriod)
        }
    }
}

/// Shuts the application's connectors down when it shuts down.
struct APNsLifecycle: LifecycleHandler {
    let registry: APNsRegistry

    func shutdownAsync(_ application: Application) async {
        await registry.shutdown()
    }

    /// For applications shut down with the synchronous `app.shutdown()` (Vapor marks it
    /// `noasync`, so this never runs on a Swift concurrency thread): waits on the calling thread for
    /// the asynchronous shutdown.
    func shutdown(_ application: Application) {
        let done = DispatchSemaphore(value: 0)
        let registry = self.registry
        Task {
            await registry.shutdown()
            done.signal()
        }
        done.wait()
    }
}
