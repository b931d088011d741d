import CoreMetrics
import Foundation
import Logging

/// Sends with certificate authentication: a TLS client certificate for your app (<doc:ProtocolReference#Certificate-authentication>).
///
/// The certificate and key are checked when the connector is made, then handed to libcurl in
/// memory. No `authorization` header is ever sent on this connector.
///
/// What the certificate is good for (``certificate``, a ``CertificateDetails``) is checked too:
/// an expired certificate, or one issued for the other environment, is refused when the connector
/// is made; one that expires within 30 days is logged as a warning (`apns.certificate.expires_soon`);
/// and a push to a topic the certificate does not cover fails before any I/O with
/// ``CredentialError/topicNotCovered(topic:pushType:covered:)``, naming the topics it covers.
///
/// ```swift
/// let connector = try CertificateConnector(
///     certificate: .file(path: "aps.pem"), privateKey: .file(path: "aps-key.pem"),
///     passphrase: ProcessInfo.processInfo.environment["APNS_KEY_PASSPHRASE"],
///     environment: .sandbox)
/// let fromP12 = try CertificateConnector(pkcs12: .file(path: "aps.p12"), password: "…", environment: .sandbox)
/// ```
///
/// Thread safety: `Sendable`; use one instance from any number of tasks.
public final class CertificateConnector: TransportConnector, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// How this connector authenticates.
    public typealias Authentication = CertificateAuthentication

    /// The APNs hosts this connector talks to.
    public let environment: APNsEnvironment
    /// The certificate's subject (RFC 2253), e.g. `UID=com.example.app,CN=Apple Push Services: …`.
    public let subject: String
    /// What the certificate is good for: validity, environments, topics.
    public let certificate: CertificateDetails

    /// The transport, environment, observability and this certificate.
    public let engine: ConnectorEngine

    /// A PEM certificate (optionally followed by its chain) and its PEM private key.
    ///
    /// - Parameters:
    ///   - certificate: The certificate: PEM text, bytes or a path.
    ///   - privateKey: Its private key, PEM; encrypted keys need `passphrase`.
    ///   - passphrase: For an encrypted key; read it from the environment or a secret store.
    ///   - environment: Must match the certificate (development → `.sandbox`).
    ///   - transport: Timeouts, trust and connection limits.
    ///   - logger: Where the connector logs connections, GOAWAYs and circuit changes
    ///     (`info`/`notice`) and each send (`debug`; `trace` adds whole device tokens). Nil logs
    ///     nothing. See <doc:Observability>.
    ///   - metricsFactory: Where its metrics go; nil uses `MetricsSystem.factory`.
    /// - Throws: ``APNsError/credential(_:)`` (wrong passphrase, key not matching the certificate,
    ///   a certificate that has expired or is for the other environment, …);
    ///   ``APNsError/validation(_:)`` for a transport setting no connection can use.
    public init(
        certificate: CredentialSource, privateKey: CredentialSource, passphrase: String? = nil,
        environment: APNsEnvironment, transport: TransportConfiguration = TransportConfiguration(),
        logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil
    ) throws(APNsError) {
        let identity: ClientIdentity
        do throws(CredentialError) {
            identity = try ClientIdentity(
                certificatePEM: OpenSSL.load(certificate), privateKeyPEM: OpenSSL.load(privateKey),
                passphrase: passphrase)
        } catch {
            throw .credential(error)
        }
        self.environment = environment
        subject = identity.details.subject
        self.certificate = identity.details
        engine = try CertificateConnector.engine(
            for: identity, environment: environment, transport: transport,
            observability: Observability(logger: logger, metricsFactory: metricsFactory))
    }

    /// A PKCS#12 bundle (`.p12` as exported from Keychain Access) and its password.
    ///
    /// - Parameters: `logger` and `metricsFactory` as for the PEM initializer.
    /// - Throws: ``APNsError/credential(_:)``: ``CredentialError/wrongPassphrase``,
    ///   ``CredentialError/legacyPKCS12`` (with how to re-export) and the other cases.
    public init(
        pkcs12: CredentialSource, password: String, environment: APNsEnvironment,
        transport: TransportConfiguration = TransportConfiguration(),
        logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil
    ) throws(APNsError) {
        let identity: ClientIdentity
        do throws(CredentialError) {
            identity = try ClientIdentity(pkcs12: OpenSSL.load(pkcs12), password: password)
        } catch {
            throw .credential(error)
        }
        self.environment = environment
        subject = identity.details.subject
        self.certificate = identity.details
        engine = try CertificateConnector.engine(
            for: identity, environment: environment, transport: transport,
            observability: Observability(logger: logger, metricsFactory: metricsFactory))
    }

    /// The engine for `identity`, once the certificate is found fit for `environment`.
    private static func engine(
        for identity: ClientIdentity, environment: APNsEnvironment, transport: TransportConfiguration,
        observability: Observability
    ) throws(APNsError) -> ConnectorEngine {
        try check(identity.details, for: environment, observability: observability)
        return try ConnectorEngine(
            credential: .certificate(identity.details), identity: identity, environment: environment,
            transport: transport, observability: observability)
    }

    /// Refuses a certificate that cannot be used now or in `environment`, and warns when it
    /// expires within ``CertificateDetails/expiryWarningPeriod``.
    private static func check(
        _ details: CertificateDetails, for environment: APNsEnvironment, observability: Observability
    ) throws(APNsError) {
        do { try details.checkValidity() } catch { throw .credential(error) }
        let wanted = environment.certificateEnvironment  // a custom host (a mock or a proxy) takes either
        if let wanted, !details.environments.isEmpty, !details.environments.contains(wanted) {
            throw .credential(.certificateEnvironmentMismatch(connector: wanted, certificate: details.environments))
        }
        if case .expiresSoon(let remaining) = details.validity() {
            observability.logger.warning(
                "APNs certificate expires soon",
                metadata: [
                    "apns.certificate.subject": "\(details.subject)",
                    "apns.certificate.not_after": "\(details.notValidAfter.formatted(.iso8601))",
                    "apns.certificate.days_left": "\(remaining.components.seconds / 86400)",
                ])
        }
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { "CertificateConnector(subject: \(subject), environment: \(environment))" }
    /// The same as `description`: no secret, ever.
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: only what `description` shows.
    public var customMirror: Mirror {
        Mirror(self, children: ["subject": subject, "environment": environment], displayStyle: .class)
    }
}
