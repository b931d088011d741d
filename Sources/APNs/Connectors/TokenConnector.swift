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
public final class TokenConnector: Connector, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
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

    private let signer: ES256Signer
    private let clock: @Sendable () -> Date
    let transport: CurlTransport
    let observability: Observability
    private let cache = Locked<Token?>(nil)

    /// A minted token and when it was issued.
    struct Token: Sendable {
        var value: String
        var issuedAt: Int
    }

    /// A connector that signs requests with a JWT from `key`.
    ///
    /// - Parameters:
    ///   - teamID: Your 10-character team id.
    ///   - keyID: The 10-character id of the `.p8` key.
    ///   - key: The `.p8` key: PEM text, its bytes, or its path.
    ///   - environment: `.sandbox`, `.production` or `.custom(host:port:)`.
    ///   - transport: Timeouts, trust and connection limits.
    ///   - refreshInterval: Token lifetime, within 20–60 minutes.
    ///   - clock: The time used for `iat` and refresh decisions; inject one in tests.
    ///   - logger: Where the connector logs connections, GOAWAYs, circuit changes and token mints
    ///     (`info`/`notice`) and each send (`debug`; `trace` adds whole device tokens). Nil logs
    ///     nothing. See <doc:Observability> for the messages and metadata keys.
    ///   - metricsFactory: Where its metrics go; nil uses `MetricsSystem.factory` (the bootstrapped
    ///     factory, or none). See <doc:Observability> for the table of names and dimensions.
    /// - Throws: ``APNsError/credential(_:)`` for a malformed id, an unreadable or wrong key, or an
    ///   interval outside Apple's window (never including key material);
    ///   ``APNsError/validation(_:)`` for a transport setting no connection can use.
    public convenience init(
        teamID: String,
        keyID: String,
        key: CredentialSource,
        environment: APNsEnvironment,
        transport: TransportConfiguration = TransportConfiguration(),
        refreshInterval: Duration = TokenConnector.defaultRefreshInterval,
        clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger? = nil,
        metricsFactory: (any MetricsFactory)? = nil
    ) throws(APNsError) {
        try self.init(
            teamID: teamID, keyID: keyID, key: key, environment: environment, transport: transport,
            refreshInterval: refreshInterval, clock: clock,
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
        teamID: String, keyID: String, key: CredentialSource, environment: APNsEnvironment,
        transport: TransportConfiguration,
        refreshInterval: Duration, clock: @escaping @Sendable () -> Date, observability: Observability
    ) throws(APNsError) {
        guard ProviderTokenRules.isAppleID(teamID) else { throw .credential(.invalidTeamID(teamID)) }
        guard ProviderTokenRules.isAppleID(keyID) else { throw .credential(.invalidKeyID(keyID)) }
        let seconds = Int(refreshInterval.components.seconds)
        guard TokenConnector.refreshWindow.contains(seconds), seconds < 60 * 60 else {
            throw .credential(.refreshIntervalOutOfRange(seconds: seconds))
        }
        self.teamID = teamID
        self.keyID = keyID
        self.environment = environment
        self.refreshInterval = refreshInterval
        self.clock = clock
        self.observability = observability
        do throws(CredentialError) {
            signer = try ES256Signer(pem: OpenSSL.load(key))
        } catch {
            throw .credential(error)
        }
        self.transport = try CurlTransport(configuration: transport, identity: nil, observability: observability)
        do throws(CredentialError) {
            _ = try currentToken()  // fail now, not on the first send, if the key cannot sign
        } catch {
            throw .credential(error)
        }
    }

    /// Sends one request within the default timeout.
    /// - Throws: ``APNsError/validation(_:)`` before any I/O when the request breaks its push
    ///   type's rules for token authentication (``APNsRequest/checkRules(for:)``); otherwise what
    ///   the transport reports.
    public func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
        try await perform(request, deadline: .now + transport.requestTimeout)
    }

    /// Sends one request, giving up at `deadline`; checked as ``perform(_:)`` is.
    public func perform(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse {
        do { try request.checkRules(for: .token) } catch { throw APNsError.validation(error) }
        return try await performChecked(request, deadline: deadline)
    }

    /// Sends `request` without checking its push type's rules: SPI for tests that show how a server
    /// answers a request the library would refuse (the mock server's own tests). Not public API.
    @_spi(RawRequests) public func performWithoutRuleCheck(_ request: APNsRequest) async throws -> APNsHTTPResponse {
        try await performChecked(request, deadline: .now + transport.requestTimeout)
    }

    func performChecked(_ request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> APNsHTTPResponse {
        let token = try currentToken()
        let endpoint = environment.endpoint(for: request.service)
        let response = try await transport.perform(
            request, endpoint: endpoint, authorization: "bearer " + token.value, deadline: deadline)
        // protocol reference, Responses: on ExpiredProviderToken mint a new token and retry once.
        if TokenConnector.isExpiredToken(response), let fresh = try refresh(after: token) {
            observability.retried(.expiredToken)
            return try await transport.perform(
                request, endpoint: endpoint, authorization: "bearer " + fresh.value, deadline: deadline)
        }
        return response
    }

    /// Stops taking sends, lets those in flight finish for up to `gracePeriod`, then fails the rest
    /// (``TransportError/Kind-swift.struct/shutDown``, with their delivery) and closes the
    /// connections. Returns once everything is released; it never blocks a thread while waiting.
    /// Sends made afterwards fail at once, not sent.
    ///
    /// ```swift
    /// await connector.shutdown(gracePeriod: .seconds(5))
    /// ```
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        await transport.shutdown(gracePeriod: gracePeriod)
    }

    /// APNs' answer to a token it considers expired (<doc:ProtocolReference#Responses>).
    static func isExpiredToken(_ response: APNsHTTPResponse) -> Bool {
        response.status == 403 && APNsRejection(response).reason == .expiredProviderToken
    }

    /// The current provider token (the JWT, without `bearer `), for handing to another HTTP/2
    /// client such as the benchmark's load generator. It is a credential for up to an hour: never
    /// log it. SPI: not part of the public API, so no public path hands out the JWT.
    @_spi(Benchmarks) public func bearerToken() throws(CredentialError) -> String {
        try currentToken().value
    }

    /// The token to send now, minting one if there is none or it is older than `refreshInterval`.
    func currentToken() throws(CredentialError) -> Token {
        let now = Int(clock().timeIntervalSince1970)
        let interval = Int(refreshInterval.components.seconds)
        return try cache.withLock { (cached: inout Token?) throws(CredentialError) -> Token in
            if let token = cached, now - token.issuedAt < interval, now >= token.issuedAt { return token }
            let token = try mint(issuedAt: now)
            cached = token
            return token
        }
    }

    /// After APNs called `rejected` expired: a new token, unless `rejected` is younger than 20
    /// minutes (then the clock is wrong and a new token would only earn TooManyProviderTokenUpdates).
    private func refresh(after rejected: Token) throws(CredentialError) -> Token? {
        let now = Int(clock().timeIntervalSince1970)
        return try cache.withLock { (cached: inout Token?) throws(CredentialError) -> Token? in
            if let token = cached, token.value != rejected.value { return token }  // someone refreshed already
            guard now - rejected.issuedAt >= TokenConnector.refreshWindow.lowerBound else { return nil }
            let token = try mint(issuedAt: now)
            cached = token
            return token
        }
    }

    private func mint(issuedAt: Int) throws(CredentialError) -> Token {
        let header = ProviderTokenRules.header(keyID: keyID)
        let claims = ProviderTokenRules.claims(teamID: teamID, issuedAt: issuedAt)
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try signer.sign(Array(signingInput.utf8))
        if observability.isEnabled {
            observability.tokensMinted.increment()
            // The ids and the time only: never the token, which is a credential for an hour.
            observability.logger.info(
                "APNs provider token minted",
                metadata: [
                    "apns.team_id": "\(teamID)", "apns.key_id": "\(keyID)", "apns.token.issued_at": "\(issuedAt)",
                ])
        }
        return Token(value: signingInput + "." + Base64URL.encode(signature), issuedAt: issuedAt)
    }

    /// The connector's transport thread as a task executor: a task that prefers it runs on the
    /// thread that drives libcurl, so a send made there, and the code after it, cross no thread.
    ///
    /// A send from an ordinary task is handed to the transport thread, and its answer back to the
    /// concurrency pool: two thread wake-ups per send. For a latency-sensitive sequence of sends,
    /// run it here (the README's Performance section has the figures):
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(connector.taskExecutor) {
    ///     for device in devices {
    ///         try await send(notification, via: connector, to: device)
    ///     }
    /// }
    /// // or: Task(executorPreference: connector.taskExecutor) { … }
    /// ```
    ///
    /// A bulk `send(_:via:to:)` (one notification, many devices) made there runs there whole,
    /// the part that reads `devices` included: no thread hand-off per batch or per outcome, which
    /// saved 5–10 % of its CPU per push in the README's benchmark runs.
    ///
    /// Keep that code short and never blocking (a bulk send's `onOutcome` and its `devices`
    /// sequence too): while it runs, the connector sends and receives nothing. Actor-isolated code still runs on its actor. Once the
    /// connector shuts down, a task that prefers it runs on the global concurrent executor instead.
    public var taskExecutor: any TaskExecutor { transport.taskExecutor }

    /// The transport's capacity: `maximumConcurrentStreams × maximumConnectionsPerHost`.
    public var concurrencyLimit: Int { transport.capacity }

    /// Connections opened so far.
    public var connectionsOpened: Int { transport.connectionsOpened }

    /// libcurl easy handles that exist (in use or idle): for the soak's memory figures.
    @_spi(Benchmarks) public var easyHandleCount: Int { transport.easyHandleCount }

    /// Connections closed because they stopped answering (a written request timed out with
    /// nothing answered on its connection since).
    public var stalledConnectionsClosed: Int { transport.stalledConnectionsClosed }

    /// Times the circuit breaker opened (see ``CircuitBreakerPolicy``).
    public var circuitTrips: Int { transport.circuitTrips }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { "TokenConnector(teamID: \(teamID), keyID: \(keyID), environment: \(environment))" }
    /// The same as `description`: no secret, ever.
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: only what `description` shows.
    public var customMirror: Mirror {
        Mirror(self, children: ["teamID": teamID, "keyID": keyID, "environment": environment], displayStyle: .class)
    }
}

/// base64url without padding (RFC 7515 §2).
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

extension TokenConnector: BatchSubmitting {
    func submit(
        _ template: APNsRequest, to devices: [Device], apnsID: (@Sendable (Device) -> APNsID)?,
        deadline: ContinuousClock.Instant?,
        owner: BulkOwner, completion: @escaping @Sendable (Device?, Result<APNsHTTPResponse, any Error>) -> Void
    ) {
        let deadline = deadline ?? .now + transport.requestTimeout
        let token: Token
        do {
            token = try currentToken()
        } catch {
            for device in devices { completion(device, .failure(error)) }
            return
        }
        let endpoint = environment.endpoint(for: template.service)
        transport.submit(
            template, to: devices, apnsID: apnsID, endpoint: endpoint, authorization: "bearer " + token.value,
            deadline: deadline,
            owner: owner
        ) {
            [self] device, result in
            // As in `perform`: on ExpiredProviderToken, one retry with a fresh token.
            if case .success(let response) = result, TokenConnector.isExpiredToken(response), let device,
                let fresh = try? refresh(after: token)
            {
                observability.retried(.expiredToken)
                transport.submit(
                    template, to: [device], apnsID: apnsID, endpoint: endpoint, authorization: "bearer " + fresh.value,
                    deadline: deadline, owner: owner, completion: completion)
                return
            }
            completion(device, result)
        }
    }

    func cancelAll(ownedBy owner: BulkOwner) {
        transport.cancelAll(ownedBy: owner)
    }
}

extension TokenConnector: ShippedConnector {
    var defaultTimeout: Duration { transport.requestTimeout }
}
