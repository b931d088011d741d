import Foundation

/// How a connector reaches APNs: through the proxy the environment names (the default), directly,
/// or through a proxy given here.
///
/// ```swift
/// var transport = TransportConfiguration()
/// transport.proxy = .http(host: "egress.internal", port: 3128)
/// transport.proxy = .socks5(host: "127.0.0.1", port: 1080, credentials: .init(username: "apns", password: secret))
/// transport.proxy = try Proxy(url: "http://apns:secret@egress.internal:3128")
/// transport.proxy = .direct   // ignore https_proxy and friends
/// ```
///
/// **The environment rule.** With ``environment`` (the default), the proxy variables apply as they
/// do for curl and most HTTP clients: `https_proxy` (or `HTTPS_PROXY`, else `all_proxy` /
/// `ALL_PROXY`) names the proxy for APNs' `https` URL, and a host listed in `no_proxy` / `NO_PROXY`
/// is reached directly. A connector reads these variables once, when it is made (as Go's
/// `ProxyFromEnvironment` does), so changing them later changes nothing for it; one that finds a
/// proxy logs it once, at `info`, with any credentials redacted. An explicit proxy ignores every
/// one of these variables, and ``direct`` ignores them too.
///
/// **What each kind does.** ``http(host:port:credentials:)`` opens a tunnel with HTTP `CONNECT`;
/// ``https(host:port:credentials:trustedCertificateAuthority:)`` does the same over TLS to the
/// proxy (verified like APNs' certificate; a private CA can be given; it needs libcurl 7.88 or
/// later, where older ones stall HTTP/2 through it, so a connector refuses it there);
/// ``socks5(host:port:credentials:)``
/// asks the proxy to connect by host name, so the proxy resolves APNs' name (remote DNS). TLS to
/// APNs always runs end to end through the tunnel, and honest outcomes hold through it: a request
/// is `notSent` only when no byte of it left towards APNs.
///
/// Thread safety: a value type, `Sendable`. Its `description` never shows a password.
public struct Proxy: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The protocol spoken to the proxy.
    public enum Scheme: String, Sendable, Hashable {
        /// HTTP `CONNECT` to the proxy in clear text.
        case http
        /// HTTP `CONNECT` over TLS to the proxy.
        case https
        /// SOCKS5, the proxy resolving APNs' host name.
        case socks5
    }

    /// A user name and password for the proxy (HTTP Basic for `http`/`https`, RFC 1929 for SOCKS5).
    /// `description`, `debugDescription` and `dump` show the user name only.
    public struct Credentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        /// The proxy user.
        public var username: String
        /// The proxy password: a secret, never shown.
        public var password: String

        /// Credentials for a proxy that asks for them.
        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }

        /// The user name; never the password.
        public var description: String { "\(username) (password redacted)" }
        /// The same as `description`.
        public var debugDescription: String { description }
        /// What `dump` and debuggers show: the user name only.
        public var customMirror: Mirror { Mirror(self, children: ["username": username], displayStyle: .struct) }
    }

    /// One explicit proxy.
    struct Endpoint: Sendable, Hashable {
        var scheme: Scheme
        var host: String
        var port: Int
        var credentials: Credentials?
        var trustedCertificateAuthority: CredentialSource?

        /// The proxy as libcurl's `CURLOPT_PROXY` takes it: no credentials (they go in their own
        /// options), `socks5h` for SOCKS5 so the proxy resolves the name, IPv6 in brackets.
        var curlURL: String {
            let name = scheme == .socks5 ? "socks5h" : scheme.rawValue
            let host = self.host.contains(":") ? "[\(self.host)]" : self.host
            return "\(name)://\(host):\(port)"
        }
    }

    enum Route: Sendable, Hashable {
        case environment
        case direct
        case explicit(Endpoint)
    }

    let route: Route

    private init(route: Route) { self.route = route }

    /// What the environment names for APNs' `https` URL, read by libcurl's rules (7.80–8.x): the
    /// proxy is the first non-empty one of `https_proxy`, `HTTPS_PROXY`, `all_proxy` and
    /// `ALL_PROXY`, the exemptions the first non-empty one of `no_proxy` and `NO_PROXY`.
    ///
    /// The transport reads it once and hands both to libcurl (`CURLOPT_PROXY`, `CURLOPT_NOPROXY`),
    /// which then matches APNs' host against the exemptions as it would have; left to itself,
    /// libcurl reads those six variables for every request.
    struct EnvironmentRoute: Sendable {
        /// The proxy URL as the variable gives it, and which variable that is; nil for none.
        let proxy: (url: String, variable: String)?
        /// The hosts reached directly (`no_proxy`'s syntax); nil for none.
        let noProxy: String?

        init(_ environment: [String: String]) {
            func first(_ names: [String]) -> (value: String, name: String)? {
                names.lazy.compactMap { name in environment[name].flatMap { $0.isEmpty ? nil : ($0, name) } }.first
            }
            proxy = first(["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]).map { ($0.value, $0.name) }
            noProxy = first(["no_proxy", "NO_PROXY"])?.value
        }
    }

    /// The proxy the environment names, if any (the default; see the environment rule above).
    public static let environment = Proxy(route: .environment)
    /// No proxy, whatever the environment says.
    public static let direct = Proxy(route: .direct)

    /// An HTTP proxy: the connector asks it to `CONNECT` to APNs.
    public static func http(host: String, port: Int, credentials: Credentials? = nil) -> Proxy {
        Proxy(route: .explicit(Endpoint(scheme: .http, host: host, port: port, credentials: credentials)))
    }

    /// An HTTPS proxy: TLS to the proxy, then `CONNECT` to APNs through it.
    ///
    /// - Parameters:
    ///   - host: The proxy's host name or address.
    ///   - port: The proxy's port.
    ///   - credentials: A user and password, if the proxy asks for them.
    ///   - trustedCertificateAuthority: The only CA trusted for the proxy's certificate; nil (the
    ///     default) trusts the system's roots. Verification cannot be turned off.
    public static func https(
        host: String, port: Int, credentials: Credentials? = nil, trustedCertificateAuthority: CredentialSource? = nil
    ) -> Proxy {
        Proxy(
            route: .explicit(
                Endpoint(
                    scheme: .https, host: host, port: port, credentials: credentials,
                    trustedCertificateAuthority: trustedCertificateAuthority)))
    }

    /// A SOCKS5 proxy, which resolves APNs' host name itself.
    public static func socks5(host: String, port: Int, credentials: Credentials? = nil) -> Proxy {
        Proxy(route: .explicit(Endpoint(scheme: .socks5, host: host, port: port, credentials: credentials)))
    }

    /// A proxy from a URL as operators write it: `http://host:port`, `https://host:port`,
    /// `socks5://host:port` (or `socks5h://`, the same: the proxy always resolves the name), with
    /// optional `user:password@` (percent-encoded where needed). The port is required.
    ///
    /// - Throws: ``APNsValidationError/invalidTransportSetting(name:value:)`` naming what is wrong
    ///   (the password never appears in it).
    public init(url: String) throws(APNsError) {
        func refuse(_ why: String) -> APNsError {
            .validation(
                .invalidTransportSetting(
                    name: "proxy",
                    value:
                        "\(Proxy.redacting(url)): \(why); use http://host:port, https://host:port or socks5://host:port, with user:password@ before the host if the proxy needs them"
                ))
        }
        guard let schemeEnd = url.firstRange(of: "://") else { throw refuse("no scheme") }
        let scheme: Scheme
        switch url[..<schemeEnd.lowerBound].lowercased() {
        case "http": scheme = .http
        case "https": scheme = .https
        case "socks5", "socks5h": scheme = .socks5
        case let other: throw refuse("unsupported scheme \(other)")
        }
        var rest = url[schemeEnd.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var credentials: Credentials?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = parts.first.flatMap({ String($0).removingPercentEncoding }),
                let password = (parts.count > 1 ? String(parts[1]).removingPercentEncoding : "")
            else { throw refuse("the credentials are not valid percent-encoding") }
            credentials = Credentials(username: user, password: password)
        }
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { throw refuse("no port") }
            portText = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw refuse("no port") }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard let port = Int(portText) else { throw refuse("the port is not a number") }
        self = Proxy(
            route: .explicit(Endpoint(scheme: scheme, host: String(host), port: port, credentials: credentials)))
        try validate()
    }

    /// A proxy as a configuration file or command-line option names it: `direct`, `environment`,
    /// or a URL for ``init(url:)``.
    ///
    ///     transport.proxy = try Proxy(setting: ProcessInfo.processInfo.environment["APNS_PROXY"] ?? "environment")
    public init(setting: String) throws(APNsError) {
        switch setting {
        case "direct": self = .direct
        case "environment": self = .environment
        default: try self.init(url: setting)
        }
    }

    /// The same proxy with `credentials` instead of its own (for a password kept out of the URL,
    /// read from a secret store or the environment). ``environment`` and ``direct`` have none and
    /// are returned as they are.
    ///
    ///     let proxy = try Proxy(url: "http://apns@egress.internal:3128")
    ///         .with(credentials: .init(username: "apns", password: secretStore["proxy"]))
    public func with(credentials: Credentials?) -> Proxy {
        guard case .explicit(var endpoint) = route else { return self }
        endpoint.credentials = credentials
        return Proxy(route: .explicit(endpoint))
    }

    /// The user name this proxy is given, if any.
    public var username: String? {
        guard case .explicit(let endpoint) = route else { return nil }
        return endpoint.credentials?.username
    }

    /// The proxy without its password: `http://user:***@host:port`, "direct" or "from the environment".
    public var description: String {
        switch route {
        case .environment: return "from the environment"
        case .direct: return "direct"
        case .explicit(let endpoint):
            let user = endpoint.credentials.map { "\($0.username):***@" } ?? ""
            let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
            return "\(endpoint.scheme.rawValue)://\(user)\(host):\(endpoint.port)"
        }
    }

    /// The same as `description`.
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: `description`, never the password.
    public var customMirror: Mirror { Mirror(self, children: ["proxy": description], displayStyle: .struct) }

    /// Throws for a host or port no connection can use.
    func validate() throws(APNsError) {
        guard case .explicit(let endpoint) = route else { return }
        func refuse(_ why: String) -> APNsError {
            .validation(.invalidTransportSetting(name: "proxy", value: "\(self): \(why)"))
        }
        guard !endpoint.host.isEmpty else { throw refuse("no host; give the proxy's host name or address") }
        guard
            endpoint.host.utf8.allSatisfy({ byte in
                byte > 0x20 && byte < 0x7F && !"/@[]?#\\ ".utf8.contains(byte)
            })
        else { throw refuse("the host has a character no host name or address has") }
        guard (1...65_535).contains(endpoint.port) else { throw refuse("the port must be 1 to 65535") }
        if let credentials = endpoint.credentials,
            credentials.username.utf8.contains(0) || credentials.password.utf8.contains(0)
        {
            throw refuse("the credentials contain a NUL byte")
        }
    }

    /// `url` with any password replaced by `***`, for messages (with or without a scheme, as
    /// `https_proxy` may be written).
    static func redacting(_ url: String) -> String {
        let start = url.firstRange(of: "://")?.upperBound ?? url.startIndex
        guard let at = url[start...].lastIndex(of: "@") else { return url }
        guard let colon = url[start..<at].firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }
}
