import APNs
import Vapor

/// A send named a connector that `app.apns` does not have, or came after the application shut
/// down. Thrown by ``Vapor/Application/APNs`` before anything is sent: the push was not sent.
///
/// As an `AbortError` it is a 500 whose reason names no credential; its `description` says
/// which connector is missing and how to register one.
///
/// Thread safety: a value type; `Sendable`.
public struct APNsConfigurationError: Error, Sendable, CustomStringConvertible, AbortError {
    /// What went wrong.
    public enum Kind: String, Sendable {
        /// No connector of this name and authentication was registered.
        case notRegistered = "not-registered"
        /// The name was registered twice.
        case alreadyRegistered = "already-registered"
        /// The application has shut down its connectors.
        case shutDown = "shut-down"
        /// An environment variable is missing or malformed.
        case environment
    }

    public let kind: Kind
    public let description: String

    init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    static func notRegistered<A>(_ id: APNsConnectorID<A>) -> APNsConfigurationError {
        let how: String
        switch A.self {
        case is TokenAuthentication.Type: how = "try app.apns.use(TokenConnector(…), as: …)"
        case is CertificateAuthentication.Type: how = "try app.apns.use(CertificateConnector(…), as: …)"
        default: how = "try app.apns.use(AnyConnector(…), as: …)"
        }
        let which = id.name == "default" ? "no default \(APNsConnectorID<A>.kind) connector" : "no connector \(id)"
        return APNsConfigurationError(.notRegistered, "app.apns has \(which): register one at start-up (\(how))")
    }

    public var status: HTTPResponseStatus { .internalServerError }
    /// What an HTTP client sees: no connector name, no path.
    public var reason: String { "push notifications are not configured on this server" }
}
