import CoreMetrics
import Foundation
import Logging

/// Sends with token authentication: a JWT signed with your `.p8` key (<doc:ProtocolReference#Token-authentication>).
///
/// One token per connector is shared by every request and re-minted inside Apple's window (by
/// default every 50 minutes; never more than once per 20). Create one connector per key and keep it
/// for the life of the process: it also owns the HTTP/2 connection.
///
/// ```swift
/// let connector = try TokenConnector(
///     teamID: "DEF123GHIJ", keyID: "ABC123DEFG",
///     key: .file(path: "AuthKey_ABC123DEFG.p8"), environment: .production)
/// try await send(notification, via: connector, to: device)
/// ```
///
/// Thread safety: `Sendable`; use one instance from any number of tasks.
public final class TokenConnector: TransportConnector, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// How this connector authenticates.
    public typealias Authentication = TokenAuthentication

    /// The shortest and longest token lifetimes Apple allows, in seconds.
    public static let refreshWindow: ClosedRange<Int> =
        Int(
            ProviderTokenRules.minimumUpdateInterval.components.seconds)...Int(
            ProviderTokenRules.lifetime.components.seconds)
    /// The default: refresh after 50 minutes, leaving room for clock skew.
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)

    /// Your 10-character team id (`iss`).
    public let teamID: String
    /// The 10-character id of the `.p8` key (`kid`).
    public let keyID: String
    /// The APNs hosts this connector talks to.
    public let environment: APNsEnvironment
    /// How old a token may get before it is re-minted.
    public let refreshInterval: Duration

    /// The transport, environment, observability and these tokens.
    public let engine: ConnectorEngine
    private let tokens: ProviderTokens

    /// A connector that signs requests with a JWT from `key`.
    ///
    /// - Parameters:
    ///   - teamID: Your 10-character team id.
    ///   - keyID: The 10-character id of the `.p8` key.
    ///   - key: The `.p8` key: PEM text, its bytes, or its path.
    ///   - scope: What the key may send, as the developer account shows it (``KeyScope``): a key
    ///     for another environment is refused here, an app it does not cover on each send, before
    ///     any I/O. Nil (not stated): every send is tried, and APNs answers.
    ///   - relatedKey: A topic-specific key's related key, whose tokens share this connector's
    ///     connections: each request is signed by the first key whose scope covers its app.
    ///   - environment: `.sandbox`, `.production` or `.custom(host:port:)`.
    ///   - transport: Timeouts, trust and connection limits.
    ///   - refreshInterval: Token lifetime, within 20–60 minutes.
    ///   - clock: The time used for `iat` and refresh decisions; inject one in tests.
    ///   - logger: Where the connector logs connections, GOAWAYs, circuit changes and token mints
    ///     (`info`/`notice`) and each send (`debug`; `trace` adds whole device tokens). Nil logs
    ///     nothing. See <doc:Observability> for the messages and metadata keys.
    ///   - metricsFactory: Where its metrics go; nil uses `MetricsSystem.factory` (the bootstrapped
    ///     factory, or none). See <doc:Observability> for the table of names and dimensions.
    /// - Throws: ``APNsError/credential(_:)`` for a malformed id, an unreadable or wrong key, a key
    ///   scoped to the other environment, or an interval outside Apple's window (never including
    ///   key material);
    ///   ``APNsError/validation(_:)`` for a transport setting no connection can use.
    public convenience init(
        teamID: String,
        keyID: String,
        key: CredentialSource,
        scope: KeyScope? = nil,
        relatedKey: RelatedKey? = nil,
        environment: APNsEnvironment,
        transport: TransportConfiguration = TransportConfiguration(),
        refreshInterval: Duration = TokenConnector.defaultRefreshInterval,
        clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger? = nil,
        metricsFactory: (any MetricsFactory)? = nil
    ) throws(APNsError) {
        try self.init(
            teamID: teamID, keyID: keyID, key: key, scope: scope, relatedKey: relatedKey, environment: environment,
            transport: transport, refreshInterval: refreshInterval, clock: clock,
            observability: Observability(logger: logger, metricsFactory: metricsFactory))
    }

    /// A connector that reports nothing at all, not even to no-op logging and metrics backends:
    /// the benchmark's reference for the cost of observability. Not public API.
    @_spi(Benchmarks) public static func unobserved(
        teamID: String, keyID: String, key: CredentialSource, environment: APNsEnvironment,
        transport: TransportConfiguration
    ) throws(APNsError) -> TokenConnector {
        try TokenConnector(
            teamID: teamID, keyID: keyID, key: key, environment: environment, transport: transport,
            refreshInterval: TokenConnector.defaultRefreshInterval, clock: { Date() }, observability: .disabled)
    }

    init(
        teamID: String, keyID: String, key: CredentialSource, scope: KeyScope? = nil, relatedKey: RelatedKey? = nil,
        environment: APNsEnvironment, transport: TransportConfiguration,
        refreshInterval: Duration, clock: @escaping @Sendable () -> Date, observability: Observability
    ) throws(APNsError) {
        guard ProviderTokenRules.isAppleID(teamID) else { throw .credential(.invalidTeamID(teamID)) }
        for (keyID, key, scope) in [(keyID, key, scope)] + (relatedKey.map { [($0.keyID, $0.key, $0.scope)] } ?? []) {
            guard ProviderTokenRules.isAppleID(keyID) else { throw .credential(.invalidKeyID(keyID)) }
            if case .file(let path) = key, let fileKeyID = SigningKeyDetails.keyID(fromFileName: path),
                fileKeyID != keyID
            {
                throw .credential(.keyIDDoesNotMatchKeyFile(keyID: keyID, fileKeyID: fileKeyID))
            }
            if let scope, !scope.covers(environment), let wanted = environment.certificateEnvironment {
                throw .credential(
                    .keyNotForEnvironment(keyID: keyID, connector: wanted, key: scope.environments.sorted()))
            }
        }
        let seconds = Int(refreshInterval.components.seconds)
        guard TokenConnector.refreshWindow.contains(seconds), seconds < 60 * 60 else {
            throw .credential(.refreshIntervalOutOfRange(seconds: seconds))
        }
        self.teamID = teamID
        self.keyID = keyID
        self.environment = environment
        self.refreshInterval = refreshInterval
        let related: ProviderTokens?
        do throws(CredentialError) {
            tokens = try ProviderTokens(
                teamID: teamID, keyID: keyID, key: key, refreshInterval: refreshInterval, clock: clock,
                observability: observability)
            related = try relatedKey.map { relatedKey throws(CredentialError) in
                try ProviderTokens(
                    teamID: teamID, keyID: relatedKey.keyID, key: relatedKey.key, refreshInterval: refreshInterval,
                    clock: clock, observability: observability)
            }
        } catch {
            throw .credential(error)
        }
        var keys = [TokenKeys.Key(tokens: tokens, scope: scope)]
        if let related, let relatedKey { keys.append(TokenKeys.Key(tokens: related, scope: relatedKey.scope)) }
        engine = try ConnectorEngine(
            credential: .token(TokenKeys(keys: keys)), identity: nil, environment: environment, transport: transport,
            observability: observability)
    }

    /// The current provider token (the JWT, without `bearer `), for handing to another HTTP/2
    /// client such as the benchmark's load generator. It is a credential for up to an hour: never
    /// log it. SPI: not part of the public API, so no public path hands out the JWT.
    @_spi(Benchmarks) public func bearerToken() throws(CredentialError) -> String {
        try tokens.current().value
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { "TokenConnector(teamID: \(teamID), keyID: \(keyID), environment: \(environment))" }
    /// The same as `description`: no secret, ever.
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: only what `description` shows.
    public var customMirror: Mirror {
        Mirror(self, children: ["teamID": teamID, "keyID": keyID, "environment": environment], displayStyle: .class)
    }
}
