import Foundation

/// The machinery behind swift-apns' connectors: a transport (libcurl's HTTP/2 connections on a
/// thread of its own), the environment's hosts, where logs and metrics go, and a credential —
/// tokens from a `.p8` key or a TLS client certificate. ``TokenConnector`` and
/// ``CertificateConnector`` each wrap one and differ only in how they make their credential; the
/// send paths (single, bulk, broadcast, ``AnyConnector``) reach it through
/// ``TransportConnector/engine``.
///
/// It has no public members and no public initializer: only swift-apns' connectors have one. It
/// is public only because ``TransportConnector`` (public, so that code can ask for one of
/// swift-apns' own connectors) names it as its one requirement, which keeps other types from
/// conforming; it is left out of the documentation.
///
/// Thread safety: `Sendable`; its parts are immutable, but for the token cache, which is behind a
/// lock.
@_documentation(visibility: internal)
public final class ConnectorEngine: Sendable {
    let transport: CurlTransport
    let environment: APNsEnvironment
    let observability: Observability
    let credential: Credential
    /// What a send through it waits on before a retry, and counts its deadline from.
    let clock: any WaitClock

    /// How requests are authenticated.
    enum Credential: Sendable {
        /// A provider token on each request (`authorization: bearer …`), from the key that covers
        /// its app.
        case token(TokenKeys)
        /// A TLS client certificate on the connection; what it covers is checked per request.
        case certificate(CertificateDetails)
    }

    init(
        credential: Credential, identity: ClientIdentity?, environment: APNsEnvironment,
        transport configuration: TransportConfiguration, observability: Observability
    ) throws(APNsError) {
        self.credential = credential
        self.environment = environment
        self.observability = observability
        clock = configuration.waitClock.clock
        transport = try CurlTransport(configuration: configuration, identity: identity, observability: observability)
    }

    /// The connector's `TransportConfiguration.requestTimeout`: a send without a timeout of its own
    /// gets it (one deadline for all the attempts of a retried send).
    var defaultTimeout: Duration { transport.requestTimeout }

    /// Refuses, before any I/O, a request the credential cannot carry: a certificate that has
    /// expired or does not cover its topic (a token covers every topic of its team). Runs after the
    /// push type's rules (`checkBeforeSending(_:via:engine:)`, the one check every path makes).
    func checkCredential(for request: APNsRequest) throws(APNsError) {
        switch credential {
        case .certificate(let certificate):
            do { try certificate.checkCovers(request, at: clock.date) } catch { throw .credential(error) }
        case .token(let keys):
            do { _ = try keys.signer(for: request) } catch { throw .credential(error) }
        }
    }

    /// Sends a request that passed `checkBeforeSending(_:via:engine:)` and reads APNs' answer once. On a token
    /// connection, an answer that calls the token expired is sent once more with a fresh token, and
    /// one that says the connection is tied to another key once more on a new connection
    /// (``secondAttempt(after:sent:)``).
    func exchange(checked request: APNsRequest, deadline: ContinuousClock.Instant) async throws -> Exchange {
        let endpoint = environment.endpoint(for: request.service)
        let token = try authorization(for: request)
        let first = Exchange(
            try await transport.perform(
                request, endpoint: endpoint, authorization: token?.token.header, deadline: deadline))
        guard case .failure(let rejection) = first.answer, let again = secondAttempt(after: rejection, sent: token)
        else { return first }
        return Exchange(
            try await transport.perform(request, endpoint: endpoint, authorization: again.header, deadline: deadline))
    }

    /// Starts `template` once per device (each to the device's path) without a task each;
    /// `completion` gets exactly one call per device, on the transport's thread, with APNs' answer
    /// read once (or the failure). With `apnsID`, each device's request carries `apnsID(device)`.
    /// A device whose answer calls for it is sent once more, as by ``exchange(checked:deadline:)``.
    func submit(
        checked template: APNsRequest, to devices: [Device], apnsID: (@Sendable (Device) -> APNsID)?,
        deadline: ContinuousClock.Instant, group: TransferGroup,
        completion: @escaping @Sendable (Device, Result<APNsResponse, APNsError>) -> Void
    ) {
        let token: Signed?
        do {
            token = try authorization(for: template)
        } catch {
            for device in devices { completion(device, .failure(.credential(error))) }
            return
        }
        let endpoint = environment.endpoint(for: template.service)
        let ids = apnsID.map { apnsID in devices.map { apnsID($0).description } }
        transport.submit(
            template, to: devices, apnsIDs: ids, endpoint: endpoint,
            authorization: token?.token.header, deadline: deadline, group: group
        ) { [self] index, raw in
            let device = devices[index]
            let result = ConnectorEngine.interpret(raw)
            guard case .failure(.rejected(let rejection)) = result,
                let again = secondAttempt(after: rejection, sent: token)
            else { return completion(device, result) }
            transport.submit(
                template, to: [device], apnsIDs: ids.map { [$0[index]] },
                endpoint: endpoint, authorization: again.header, deadline: deadline, group: group
            ) { _, raw in completion(device, ConnectorEngine.interpret(raw)) }
        }
    }

    /// A provider token and the key's tokens it came from.
    typealias Signed = (tokens: ProviderTokens, token: ProviderTokens.Token)

    /// The provider token `request` carries on a token connection, from the key that covers its
    /// app; nil on a certificate connection.
    private func authorization(for request: APNsRequest) throws(CredentialError) -> Signed? {
        guard case .token(let keys) = credential else { return nil }
        let tokens = try keys.signer(for: request)
        return (tokens, try tokens.current())
    }

    /// The token to send a request with once more after APNs refused it with `token`, when the
    /// refusal calls for it (``ProviderTokens/secondAttempt(after:sent:)``); never on a certificate
    /// connection. The one place either send path decides it.
    private func secondAttempt(after rejection: APNsRejection, sent: Signed?) -> ProviderTokens.Token? {
        guard let sent else { return nil }
        return sent.tokens.secondAttempt(after: rejection, sent: sent.token)
    }

    /// What the transport's result for one request means, read once: the acceptance, the
    /// rejection, or the failure as an ``APNsError``.
    static func interpret(_ result: Result<APNsHTTPResponse, any Error>) -> Result<APNsResponse, APNsError> {
        switch result {
        case .success(let response): Exchange(response).answer.mapError(APNsError.rejected)
        case .failure(let error): .failure(APNsError(wrapping: error))
        }
    }

    /// Cancels what ``submit(checked:to:apnsID:deadline:group:completion:)`` started with `group`
    /// and has not finished, and refuses what it starts with `group` later.
    func cancelAll(in group: TransferGroup) {
        transport.cancelAll(in: group)
    }
}

/// One request's exchange with APNs: the response as it came back, and what it means, read once
/// where it arrives.
struct Exchange: Sendable {
    let response: APNsHTTPResponse
    /// The acceptance, or the rejection the response carries.
    let answer: Result<APNsResponse, APNsRejection>

    @inline(never)  // reading a rejection's JSON stays out of the async frame of every send
    init(_ response: APNsHTTPResponse) {
        self.response = response
        answer = Result { () throws(APNsRejection) in try APNsResponse(interpreting: response) }
    }
}
