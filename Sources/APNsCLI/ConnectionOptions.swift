import APNs
import ArgumentParser
import Foundation

/// The options that choose credentials and server, shared by every command that talks to APNs.
struct ConnectionOptions: ParsableArguments {
    enum EnvironmentChoice: String, EnumerableFlag {
        case sandbox, production
    }

    @Option(name: .customLong("key-file"), help: "The .p8 signing key (token authentication).") var keyFile: String?
    @Option(name: .customLong("key-id"), help: "The 10-character key id.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "The 10-character team id.") var teamID: String?
    @Option(
        name: .customLong("key-scope"),
        help: ArgumentHelp(
            "What the --key-file key may send, as the developer account shows it: team, team:sandbox, team:production or topics:ENVIRONMENT:BUNDLE[,BUNDLE…].",
            discussion:
                "Stated, a send the key cannot make (the other environment, an app a topic key does not cover) is refused before any byte; without it, APNs answers."
        )) var keyScope: String?
    @Option(name: .customLong("cert"), help: "PEM client certificate (certificate authentication).") var certificate:
        String?
    @Option(name: .customLong("key"), help: "PEM private key of --cert.") var privateKey: String?
    @Option(name: .customLong("passphrase-env"), help: "Environment variable holding the --key passphrase.")
    var passphraseEnvironment: String?
    @Option(name: .customLong("p12"), help: "PKCS#12 bundle (certificate authentication).") var pkcs12: String?
    @Option(name: .customLong("password-env"), help: "Environment variable holding the --p12 password.")
    var passwordEnvironment: String?
    @Flag(help: "APNs environment (default: sandbox).") var environment: EnvironmentChoice?
    @Option(help: "HOST:PORT of another server, e.g. a mock APNs (used for every APNs host).") var host: String?
    @Option(name: .customLong("ca-file"), help: "Trust only this CA (PEM) for the server certificate.") var caFile:
        String?
    @Option(
        help: ArgumentHelp(
            "Reach APNs through this proxy: http://HOST:PORT, https://HOST:PORT or socks5://HOST:PORT (user@ before the host if it needs credentials), or `direct`.",
            discussion:
                "Without it, https_proxy (or HTTPS_PROXY, all_proxy) and no_proxy apply as for curl; `direct` ignores them."
        )) var proxy: String?
    @Option(
        name: .customLong("proxy-password-env"),
        help: "Environment variable holding the proxy's password (the user is the one in --proxy).")
    var proxyPasswordEnvironment: String?

    /// `--key-scope` read (``KeyScope/init(argument:)``).
    func resolveKeyScope() throws -> KeyScope? {
        try keyScope.map(Self.keyScope(from:))
    }

    /// A `--key-scope` argument read, or a usage error that lists the forms it takes.
    static func keyScope(from argument: String) throws -> KeyScope {
        guard let scope = KeyScope(argument: argument) else {
            throw UsageError("--key-scope \(argument) is not a key scope: give \(KeyScope.argumentForms)")
        }
        return scope
    }

    /// The connector the options describe, or nil when no credentials were given.
    func makeConnector() throws -> AnyConnector? {
        let environment = try resolveEnvironment()
        var transport = TransportConfiguration()
        if let caFile { transport.trustedCertificateAuthority = .file(path: caFile) }
        transport.proxy = try resolveProxy()
        let kinds = [keyFile != nil, certificate != nil, pkcs12 != nil].filter { $0 }.count
        guard kinds <= 1 else { throw UsageError("choose one of --key-file, --cert or --p12") }
        if let keyFile {
            guard let keyID, let teamID else { throw UsageError("--key-file needs --key-id and --team-id") }
            return AnyConnector(
                try TokenConnector(
                    teamID: teamID, keyID: keyID, key: .file(path: keyFile), scope: try resolveKeyScope(),
                    environment: environment, transport: transport))
        }
        if let certificate {
            guard let privateKey else { throw UsageError("--cert needs --key") }
            let passphrase = try passphraseEnvironment.map { try Self.secret(from: $0) }
            return AnyConnector(
                try CertificateConnector(
                    certificate: .file(path: certificate), privateKey: .file(path: privateKey), passphrase: passphrase,
                    environment: environment, transport: transport))
        }
        if let pkcs12 {
            guard let passwordEnvironment else { throw UsageError("--p12 needs --password-env VAR") }
            return AnyConnector(
                try CertificateConnector(
                    pkcs12: .file(path: pkcs12), password: try Self.secret(from: passwordEnvironment),
                    environment: environment, transport: transport))
        }
        return nil
    }

    /// Runs `body` with the connector the options describe (nil when no credentials were given),
    /// then shuts it down, also when `body` throws: every send has finished by then, and the
    /// process never exits with the transport's thread still inside libcurl and OpenSSL.
    func withConnector<T>(_ body: (AnyConnector?) async throws -> T) async throws -> T {
        let connector = try makeConnector()
        let result: T
        do {
            result = try await body(connector)
        } catch {
            await connector?.shutdown(gracePeriod: .zero)
            throw error
        }
        await connector?.shutdown(gracePeriod: .zero)
        return result
    }

    /// ``withConnector(_:)`` for commands that cannot run without credentials: no credentials is
    /// a usage error naming the options to give.
    func withRequiredConnector<T>(_ body: (AnyConnector) async throws -> T) async throws -> T {
        try await withConnector { connector in
            guard let connector else {
                throw UsageError(
                    "give credentials: --key-file/--key-id/--team-id, --cert/--key, or --p12/--password-env")
            }
            return try await body(connector)
        }
    }

    /// The value of the environment variable that holds a passphrase or password.
    static func secret(from variable: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[variable] else {
            throw UsageError("the environment variable \(variable) is not set")
        }
        return value
    }

    /// `--proxy` and `--proxy-password-env` as a ``Proxy`` (the environment's when neither is given).
    func resolveProxy() throws -> Proxy {
        guard let proxy else {
            if proxyPasswordEnvironment != nil { throw UsageError("--proxy-password-env needs --proxy") }
            return .environment
        }
        let parsed: Proxy
        do throws(APNsError) { parsed = try Proxy(setting: proxy) } catch { throw UsageError("--proxy: \(error)") }
        guard let proxyPasswordEnvironment else { return parsed }
        guard let username = parsed.username else {
            throw UsageError("--proxy-password-env needs a proxy URL with a user, as in http://USER@HOST:PORT")
        }
        return parsed.with(
            credentials: .init(username: username, password: try Self.secret(from: proxyPasswordEnvironment)))
    }

    private func resolveEnvironment() throws -> APNsEnvironment {
        if let host {
            if environment != nil {
                throw UsageError("give either --host or --\(environment?.rawValue ?? "sandbox"), not both")
            }
            guard let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]),
                (1...65535).contains(port)
            else {
                throw UsageError("--host \(host) is not HOST:PORT")
            }
            var name = String(host[..<colon])
            if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
            return .custom(host: name, port: port)
        }
        return environment == .production ? .production : .sandbox
    }
}
