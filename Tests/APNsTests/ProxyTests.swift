@testable import APNs
import APNsMockServer
import Foundation
import Testing

/// Sends through real proxies on 127.0.0.1, started by the tests from Debian's packages (installed
/// by Scripts/install-dependencies.sh): tinyproxy (HTTP CONNECT, with and without Basic
/// credentials), stunnel in front of it (an HTTPS proxy), microsocks (SOCKS5, with and without
/// credentials).
@Suite(.serialized) struct ProxyTests {
    static let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("through the proxy") }
    static let password = "s3cret-proxy-pa55"

    @Test func aSendGoesThroughAnHTTPProxy() async throws {
        let proxy = try await LocalProxy.tinyproxy()
        defer { proxy.stop() }
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector(adjust: { $0.proxy = .http(host: "127.0.0.1", port: proxy.port) }
            )
            let response = try await send(Self.notification, via: connector, to: .test)
            #expect(response.status == 200)
            #if os(Linux)
                // The server saw the proxy's connection, not this process's: the socket it accepted is
                // held by tinyproxy. (Sent directly, it is this process's: the check can tell them apart.)
                let direct = try fixture.tokenConnector()
                _ = try await send(Self.notification, via: direct, to: .test)
                let directPort = try #require(
                    fixture.server.requests.last?.remoteAddress?.split(separator: ":").last.flatMap { Int($0) })
                let server = fixture.server.port
                #expect(LocalProxy.process(getpid(), holdsSocketFrom: directPort, to: server))
                await direct.shutdown()
                let seen = try #require(fixture.server.requests.first?.remoteAddress)
                let port = try #require(seen.split(separator: ":").last.flatMap { Int($0) })
                #expect(
                    proxy.holdsSocket(localPort: port, remotePort: server),
                    "the server saw \(seen), not a socket of the proxy")
                #expect(
                    !LocalProxy.process(getpid(), holdsSocketFrom: port, to: server),
                    "the server saw \(seen), this process")
            #endif
            let connections = fixture.server.connectionCount
            // The proxy carried it: with the proxy gone, the same connector cannot reach APNs, and
            // says that the proxy is what failed.
            await connector.shutdown()
            proxy.stop()
            let again = try fixture.tokenConnector(adjust: { $0.proxy = .http(host: "127.0.0.1", port: proxy.port) })
            let failure = try await expectTransportFailure { try await send(Self.notification, via: again, to: .test) }
            #expect(failure.kind == .proxy, "\(failure)")
            #expect(failure.delivery == .notSent)
            #expect(
                failure.message.contains(
                    "nothing accepted the connection to the proxy (http://127.0.0.1:\(proxy.port))"), "\(failure)")
            #expect(fixture.server.connectionCount == connections)
        }
    }

    @Test func aProxyThatNeedsCredentialsRefusesWithoutAndAcceptsWith() async throws {
        let proxy = try await LocalProxy.tinyproxy(username: "apns", password: Self.password)
        defer { proxy.stop() }
        try await Fixture.with { fixture in
            let without = try fixture.tokenConnector(adjust: { $0.proxy = .http(host: "127.0.0.1", port: proxy.port) })
            let failure = try await expectTransportFailure {
                try await send(Self.notification, via: without, to: .test)
            }
            #expect(failure.kind == .proxy, "\(failure)")
            #expect(failure.delivery == .notSent)
            #expect(failure.message.contains("refused the tunnel to APNs with HTTP 407"), "\(failure)")
            #expect(failure.description.contains("Check TransportConfiguration.proxy"), "\(failure)")
            #expect(fixture.server.connectionCount == 0)

            let wrong = try fixture.tokenConnector(adjust: {
                $0.proxy = .http(
                    host: "127.0.0.1", port: proxy.port, credentials: .init(username: "apns", password: "wrong"))
            })
            let refused = try await expectTransportFailure { try await send(Self.notification, via: wrong, to: .test) }
            #expect(refused.kind == .proxy && refused.delivery == .notSent, "\(refused)")

            let accepted = try Proxy(url: "http://apns:\(Self.password)@127.0.0.1:\(proxy.port)")
            let with = try fixture.tokenConnector(adjust: { $0.proxy = accepted })
            let response = try await send(Self.notification, via: with, to: .test)
            #expect(response.status == 200)
        }
    }

    /// Whether the loaded libcurl carries HTTP/2 through an HTTPS proxy (7.88 or later).
    static let httpsProxyWorks = (try? Libcurl.loaded.get())?.carriesHTTP2ThroughAnHTTPSProxy ?? false

    /// On a libcurl that stalls HTTP/2 through an HTTPS proxy, a connector given one is refused
    /// when it is made, before anything is written, with what to use instead.
    @Test(.enabled(if: !httpsProxyWorks, "libcurl 7.88 and later carry HTTP/2 through an HTTPS proxy"))
    func anHTTPSProxyIsRefusedWhereLibcurlStallsThroughIt() async throws {
        try await Fixture.with { fixture in
            do {
                _ = try fixture.tokenConnector(adjust: { $0.proxy = .https(host: "127.0.0.1", port: 9) })
                Issue.record("an HTTPS proxy was accepted on \(String(describing: try? Libcurl.loaded.get().version))")
            } catch let error as APNsError {
                guard case .transport(let failure) = error else {
                    Issue.record("expected a transport error, got \(error)")
                    return
                }
                #expect(failure.kind == .unsupportedLibcurl && failure.delivery == .notSent, "\(failure)")
                #expect(failure.message.contains("stalls HTTP/2 connections through an HTTPS proxy"), "\(failure)")
                #expect(failure.message.contains("use an HTTP proxy"), "\(failure)")
            }
            // An HTTP proxy is accepted on the same libcurl.
            _ = try fixture.tokenConnector(adjust: { $0.proxy = .http(host: "127.0.0.1", port: 9) })
        }
    }

    @Test func anHTTPSProxyNeedsLibcurl7_88() throws {
        let http2 = Int32(1 << 16)  // CURL_VERSION_HTTP2
        for (number, works) in [
            (UInt32(0x07_50_00), false), (0x07_51_00, false), (0x07_58_00, true), (0x08_0E_01, true),
        ] {
            #expect(try Libcurl(versionNumber: number, features: http2).carriesHTTP2ThroughAnHTTPSProxy == works)
        }
    }

    @Test(.enabled(if: httpsProxyWorks, "an HTTPS proxy needs libcurl 7.88 or later"))
    func aSendGoesThroughAnHTTPSProxy() async throws {
        let authority = try MockCertificateAuthority()
        let tunnel = try await LocalProxy.tinyproxy()
        defer { tunnel.stop() }
        let proxy = try await LocalProxy.stunnel(
            inFrontOf: tunnel.port, certificate: try authority.issueServerCertificate())
        defer { proxy.stop() }
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector(adjust: {
                $0.proxy = .https(
                    host: "127.0.0.1", port: proxy.port, trustedCertificateAuthority: .pem(authority.certificatePEM))
            })
            let response = try await send(Self.notification, via: connector, to: .test)
            #expect(response.status == 200)
            // Verified like APNs' certificate: a proxy certificate no trusted CA signed is refused.
            let untrusting = try fixture.tokenConnector(adjust: {
                $0.proxy = .https(host: "127.0.0.1", port: proxy.port)
            })
            let failure = try await expectTransportFailure {
                try await send(Self.notification, via: untrusting, to: .test)
            }
            #expect(failure.delivery == .notSent, "\(failure)")
            #expect(failure.kind == .tls || failure.kind == .proxy, "\(failure)")
        }
    }

    @Test func aSendGoesThroughASOCKS5ProxyWithCredentials() async throws {
        let proxy = try await LocalProxy.microsocks(username: "apns", password: Self.password)
        defer { proxy.stop() }
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector(adjust: {
                $0.proxy = .socks5(
                    host: "127.0.0.1", port: proxy.port, credentials: .init(username: "apns", password: Self.password))
            })
            let response = try await send(Self.notification, via: connector, to: .test)
            #expect(response.status == 200)
            let without = try fixture.tokenConnector(adjust: { $0.proxy = .socks5(host: "127.0.0.1", port: proxy.port) }
            )
            let failure = try await expectTransportFailure {
                try await send(Self.notification, via: without, to: .test)
            }
            #expect(failure.kind == .proxy, "\(failure)")
            #expect(failure.delivery == .notSent)
        }
    }

    /// Honest outcomes hold through the tunnel: the server processes the request and resets the
    /// connection; the proxy passes the close on, and the send is `unknown`, never `notSent`.
    @Test func aResetAfterProcessingIsStillUnknownThroughTheProxy() async throws {
        let proxy = try await LocalProxy.tinyproxy()
        defer { proxy.stop() }
        try await Fixture.with(adjust: { $0.recordsRequests = false }) { fixture in
            let connector = try fixture.tokenConnector(adjust: { $0.proxy = .http(host: "127.0.0.1", port: proxy.port) }
            )
            fixture.server.inject(.resetAfterProcessing(requests: 1), connections: 1)
            let id = APNsID()
            let notification = AlertNotification(bundleID: Fixture.bundleID, apnsID: id) {
                Alert("processed, then reset")
            }
            let failure = try await expectTransportFailure { try await send(notification, via: connector, to: .test) }
            #expect(failure.delivery == .unknown, "\(failure)")
            #expect(fixture.server.processedCount(apnsID: id.description) == 1)
        }
    }

    @Test func credentialsNeverShow() throws {
        var configuration = TransportConfiguration()
        configuration.proxy = try Proxy(url: "socks5h://apns:\(Self.password)@[::1]:1080")
        var dumped = ""
        dump(configuration, to: &dumped)
        let shown = [
            "\(configuration)", String(reflecting: configuration), dumped, "\(configuration.proxy)",
            String(reflecting: Proxy.Credentials(username: "apns", password: Self.password)),
        ]
        for text in shown { #expect(!text.contains(Self.password), "\(text)") }
        #expect(configuration.proxy.description == "socks5://apns:***@[::1]:1080")
        let error = #expect(throws: APNsError.self) { try Proxy(url: "http://apns:\(Self.password)@proxy.internal") }
        #expect(error.map { "\($0)" }?.contains(Self.password) == false)
        #expect(
            error.map { "\($0)" }?.contains("http://apns:***@proxy.internal: no port") == true,
            "\(String(describing: error))")
    }

    @Test func proxyURLsAndTheirLibcurlForm() throws {
        func curl(_ url: String) throws -> String? {
            guard case .explicit(let endpoint) = try Proxy(url: url).route else { return nil }
            return endpoint.curlURL
        }
        #expect(try curl("http://egress.internal:3128") == "http://egress.internal:3128")
        #expect(try curl("HTTPS://egress.internal:8443/") == "https://egress.internal:8443")
        // The proxy resolves APNs' name: socks5 is always libcurl's socks5h.
        #expect(try curl("socks5://127.0.0.1:1080") == "socks5h://127.0.0.1:1080")
        #expect(try curl("socks5h://[::1]:1080") == "socks5h://[::1]:1080")
        guard case .explicit(let endpoint) = try Proxy(url: "http://a%40b:p%3Ass@h:1").route else {
            Issue.record("not explicit")
            return
        }
        #expect(endpoint.credentials == .init(username: "a@b", password: "p:ss"))
        for bad in [
            "egress:3128", "ftp://egress:21", "http://egress", "http://egress:0", "http://egress:70000",
            "http://:3128", "http://eg ress:3128", "http://u:%zz@h:1",
        ] {
            #expect(throws: APNsError.self, "\(bad)") { try Proxy(url: bad) }
        }
        var configuration = TransportConfiguration()
        configuration.proxy = .http(host: "", port: 3128)
        #expect(throws: APNsError.self) { try configuration.validate() }
    }

    /// The environment rule: https_proxy (then HTTPS_PROXY, all_proxy, ALL_PROXY) unless the proxy is
    /// explicit or direct; what the connector logs names it without its password.
    @Test func theEnvironmentRuleAsLogged() {
        let environment = [
            "HTTPS_PROXY": "http://apns:\(Self.password)@egress:3128", "all_proxy": "socks5://x:1",
            "no_proxy": "localhost",
        ]
        #expect(
            CurlTransport.proxyRoute(.environment, environment: environment)
                == "http://apns:***@egress:3128 (from HTTPS_PROXY), except no_proxy: localhost")
        #expect(
            CurlTransport.proxyRoute(.environment, environment: ["all_proxy": "egress:3128"])
                == "egress:3128 (from all_proxy)")
        #expect(
            CurlTransport.proxyRoute(.environment, environment: ["https_proxy": "u:pw@egress:3128"])
                == "u:***@egress:3128 (from https_proxy)")
        #expect(CurlTransport.proxyRoute(.environment, environment: [:]) == nil)
        #expect(CurlTransport.proxyRoute(.direct, environment: environment) == nil)
        #expect(CurlTransport.proxyRoute(.http(host: "h", port: 1), environment: environment) == "http://h:1")
        // What the transport hands libcurl, read once: an empty variable counts as unset, as it
        // does for libcurl, so the next one in the order applies.
        let route = Proxy.EnvironmentRoute([
            "https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "socks5h://egress:1080", "no_proxy": "",
            "NO_PROXY": "api.push.apple.com",
        ])
        #expect(route.proxy?.url == "socks5h://egress:1080" && route.proxy?.variable == "all_proxy")
        #expect(route.noProxy == "api.push.apple.com")
        #expect(Proxy.EnvironmentRoute(["http_proxy": "http://egress:3128"]).proxy == nil)  // not for https
        #expect(Proxy.EnvironmentRoute(environment).proxy?.variable == "HTTPS_PROXY")
    }

    private func expectTransportFailure(
        _ body: () async throws -> APNsResponse, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TransportError {
        do {
            let response = try await body()
            Issue.record("expected a transport failure, got \(response.status)", sourceLocation: sourceLocation)
        } catch APNsError.transport(let failure) {
            return failure
        } catch {
            Issue.record("expected a transport failure, got \(error)", sourceLocation: sourceLocation)
        }
        throw CancellationError()
    }
}
