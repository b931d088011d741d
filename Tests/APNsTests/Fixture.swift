@_exported import TestFixtures
import APNs
import APNsTesting
import InMemoryLogging
import Logging
import Testing

/// Expects `body` to fail with APNs' rejection `reason` (and `status`).
func expectRejection(
    _ reason: APNsRejection.Reason, status: Int, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected a \(status) \(reason) rejection", sourceLocation: sourceLocation)
    } catch let error as APNsError {
        guard case .rejected(let rejection) = error else {
            Issue.record("expected a \(status) \(reason) rejection, got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(rejection.status == status, sourceLocation: sourceLocation)
        #expect(rejection.reason == reason, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected an APNsError, got \(error)", sourceLocation: sourceLocation)
    }
}

/// The transport failure `error` carries, if any.
func transportFailure(_ error: any Error) -> TransportError? {
    if case .transport(let failure)? = error as? APNsError { return failure }
    return nil
}

extension Fixture {
    /// A token connector to this fixture's server whose log, from `debug` up, goes to `logs`.
    func tokenConnector(loggingTo logs: InMemoryLogHandler) throws -> TokenConnector {
        var logger = Logger(label: "apns-test", factory: { _ in logs })
        logger.logLevel = .debug
        let connector = try TokenConnector(
            teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
            environment: environment, transport: transport, logger: logger)
        made.withLock { $0.append(connector) }
        return connector
    }

    /// A token connector to this fixture's server that reports to `reports`.
    func tokenConnector(
        reportingTo reports: AwaitableReports, adjust: (inout TransportConfiguration) -> Void = { _ in }
    ) throws -> TokenConnector {
        var transport = transport
        adjust(&transport)
        let connector = try TokenConnector(
            teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
            environment: environment, transport: transport, logger: reports.logger, metricsFactory: reports.metrics)
        made.withLock { $0.append(connector) }
        return connector
    }

    /// A certificate connector to this fixture's server that reports to `reports`.
    func certificateConnector(reportingTo reports: AwaitableReports) throws -> CertificateConnector {
        let connector = try CertificateConnector(
            certificate: .pem(client.certificatePEM), privateKey: .pem(client.privateKeyPEM),
            environment: environment, transport: transport, logger: reports.logger, metricsFactory: reports.metrics)
        made.withLock { $0.append(connector) }
        return connector
    }
}
