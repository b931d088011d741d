import APNs

/// The name of a connector registered with ``Vapor/Application/APNs``, typed by how it
/// authenticates, so that a send through it compiles only for push types that accept that
/// authentication — as the library's own `send(_:via:to:)` does.
///
/// Name your connectors once, beside your configuration:
///
/// ```swift
/// extension APNsConnectorID<CertificateAuthentication> {
///     static let legacyApp = APNsConnectorID("legacy-app")
/// }
///
/// try app.apns.use(legacyConnector, as: .legacyApp)
/// try await req.apns.send(BackgroundNotification(bundleID: "com.example.legacy"), via: .legacyApp, to: device)
/// // A widget push needs token authentication: through `.legacyApp` it does not compile.
/// ```
///
/// Each authentication has its own ``default``: a token connector and a certificate connector can
/// both be the default, and a send without `via:` takes the one its push type accepts.
/// A connector chosen at run time (`AnyConnector`) is named by an
/// `APNsConnectorID<RunTimeAuthentication>`; sends through it are checked before any I/O instead.
///
/// Thread safety: a value type; `Sendable`.
public struct APNsConnectorID<Authentication: AuthenticationKind>: Hashable, Sendable, CustomStringConvertible {
    /// The name, unique per authentication.
    public let name: String

    /// A name for a connector of this authentication.
    public init(_ name: String) {
        self.name = name
    }

    /// The connector a send without `via:` uses, for this authentication.
    ///
    /// Leave `via:` out to send through it. `via: .default` names no authentication, and a send
    /// has an overload for each (a run-time connector takes every push type), so the compiler
    /// finds it ambiguous; spell the kind out when you need it: `via: APNsConnectorID<TokenAuthentication>.default`.
    public static var `default`: APNsConnectorID { APNsConnectorID("default") }

    public var description: String { "\(name) (\(Self.kind))" }

    /// The authentication's name in messages: token, certificate or chosen at run time.
    static var kind: String {
        switch Authentication.self {
        case is TokenAuthentication.Type: return "token"
        case is CertificateAuthentication.Type: return "certificate"
        default: return "chosen at run time"
        }
    }
}
