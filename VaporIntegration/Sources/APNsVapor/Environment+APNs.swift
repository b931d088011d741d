import APNs
import Vapor

extension Application.APNs {
    /// Makes a connector from environment variables and registers it as the default of its
    /// authentication (or under `name`), with the application's logger:
    ///
    /// | variable | meaning |
    /// |---|---|
    /// | `APNS_KEY_FILE`, `APNS_KEY_ID`, `APNS_TEAM_ID` | token authentication: the `.p8` key's path and its ids |
    /// | `APNS_CERTIFICATE_FILE`, `APNS_CERTIFICATE_PASSWORD` | certificate authentication: a PKCS#12 file (when no key is set) |
    /// | `APNS_ENVIRONMENT` | `production` or `sandbox` (the default) |
    /// | `APNS_HOST`, `APNS_CA_FILE` | another server (`host:port`) and the CA it was issued by: a mock APNs in tests |
    /// | `APNS_PROXY` | `direct`, `environment` (libcurl's `https_proxy`, the default) or a proxy URL |
    ///
    /// `prefix` replaces `APNS` for a second app or team (`APNS_SHOP_KEY_FILE`, …). Secrets come
    /// from files; none reaches a log or an error.
    ///
    /// ```swift
    /// try app.apns.useFromEnvironment()                    // the default connector
    /// try app.apns.useFromEnvironment(prefix: "APNS_SHOP", as: "shop")
    /// ```
    /// - Throws: ``APNsConfigurationError`` naming a missing or malformed variable; `APNsError`
    ///   when the key or certificate cannot be read (its description says why, never its content).
    public func useFromEnvironment(prefix: String = "APNS", as name: String = "default") throws {
        let variables = EnvironmentVariables(prefix: prefix)
        var transport = TransportConfiguration()
        if let ca = variables["CA_FILE"] { transport.trustedCertificateAuthority = .file(path: ca) }
        if let proxy = variables["PROXY"] { transport.proxy = try Proxy(setting: proxy) }
        let environment = try variables.apnsEnvironment()
        let logger = application.logger
        if let keyFile = variables["KEY_FILE"] {
            let connector = try TokenConnector(
                teamID: try variables.required("TEAM_ID"), keyID: try variables.required("KEY_ID"),
                key: .file(path: keyFile), environment: environment, transport: transport, logger: logger)
            try use(connector, as: APNsConnectorID(name))
        } else if let certificate = variables["CERTIFICATE_FILE"] {
            let connector = try CertificateConnector(
                pkcs12: .file(path: certificate), password: variables["CERTIFICATE_PASSWORD"] ?? "",
                environment: environment, transport: transport, logger: logger)
            try use(connector, as: APNsConnectorID(name))
        } else {
            throw APNsConfigurationError(
                .environment,
                "set \(prefix)_KEY_FILE, \(prefix)_KEY_ID and \(prefix)_TEAM_ID for token authentication, "
                    + "or \(prefix)_CERTIFICATE_FILE for a certificate")
        }
    }
}

/// The `PREFIX_NAME` environment variables.
struct EnvironmentVariables {
    let prefix: String

    subscript(name: String) -> String? {
        Environment.get("\(prefix)_\(name)").flatMap { $0.isEmpty ? nil : $0 }
    }

    func required(_ name: String) throws -> String {
        guard let value = self[name] else {
            throw APNsConfigurationError(.environment, "\(prefix)_\(name) is not set")
        }
        return value
    }

    func apnsEnvironment() throws -> APNsEnvironment {
        var environment: APNsEnvironment
        switch self["ENVIRONMENT"] ?? "sandbox" {
        case "production": environment = .production
        case "sandbox": environment = .sandbox
        case let other:
            throw APNsConfigurationError(
                .environment, "\(prefix)_ENVIRONMENT is \(other): use production or sandbox")
        }
        if let host = self["HOST"] {
            guard let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]),
                (1...65_535).contains(port), colon != host.startIndex
            else {
                throw APNsConfigurationError(.environment, "\(prefix)_HOST is \(host): use host:port")
            }
            environment = .custom(host: String(host[..<colon]), port: port)
        }
        return environment
    }
}
