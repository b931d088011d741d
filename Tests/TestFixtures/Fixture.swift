import APNs
import APNsMockServer
import Foundation

/// A running mock server with a registered signing key and a client certificate, and connectors
/// wired to it. Everything is generated at test time. Shared by the library's and the mock
/// server's test targets (a target of its own, not a product).
package struct Fixture {
    package static let teamID = "TEAM000001"
    package static let keyID = "KEY0000001"
    package static let bundleID = "com.example.app"

    package let server: MockAPNsServer
    package let signingKey: MockCertificateAuthority.SigningKey
    package let client: MockCertificateAuthority.IssuedCertificate
    /// The CA the server trusts for client certificates: issue more with it.
    package let authority: MockCertificateAuthority
    package var environment: APNsEnvironment { .custom(host: server.host, port: server.port) }

    package var transport: TransportConfiguration {
        var configuration = TransportConfiguration()
        configuration.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
        configuration.requestTimeout = .seconds(60)
        // A loaded machine can make any test's streams cycle slowly; tests that count connections
        // must not meet one added for it. PoolGrowthTests turn it on.
        configuration.additionalConnectionsWhenSlow = 0
        return configuration
    }

    package static func start(_ adjust: (inout MockAPNsServer.Configuration) -> Void = { _ in }) async throws -> Fixture
    {
        let key = MockCertificateAuthority.makeSigningKey(teamID: teamID, keyID: keyID)
        let authority = try MockCertificateAuthority()
        var configuration = MockAPNsServer.Configuration(signingKeys: [key])
        configuration.certificateAuthority = authority
        configuration.strict = true  // our client never omits apns-push-type nor writes unknown aps keys
        adjust(&configuration)
        let server = try await MockAPNsServer.start(configuration)
        return Fixture(
            server: server, signingKey: key, client: try authority.issueClientCertificate(bundleID: bundleID),
            authority: authority)
    }

    /// Token connectors made without a clock of their own mint with this one, so that two of them
    /// (for one key, as some tests need) never mint a second apart, which the server would answer
    /// with TooManyProviderTokenUpdates, as APNs does. Tests stay well inside a token's hour.
    package static let tokenClock: @Sendable () -> Date = { [issued = Date()] in issued }

    /// Runs `body` with a started fixture, then shuts down every connector the fixture made and
    /// stops the server — also when `body` throws or an expectation fails, so a failing test never
    /// leaks a server or a transport thread into later ones (as Hummingbird's `app.test`).
    ///
    /// ```swift
    /// try await Fixture.with(adjust: { $0.goAwayAfterStreams = 50 }) { fixture in
    ///     let connector = try fixture.tokenConnector()
    ///     try await send(notification, via: connector, to: .test)
    /// }
    /// ```
    package static func with<T>(
        adjust: (inout MockAPNsServer.Configuration) -> Void = { _ in }, _ body: (Fixture) async throws -> T
    ) async throws -> T {
        let fixture = try await start(adjust)
        let result: Result<T, any Error>
        do { result = .success(try await body(fixture)) } catch { result = .failure(error) }
        for connector in fixture.made.withLock({ $0 }) { await connector.shutdown(gracePeriod: .zero) }
        try await fixture.stop()
        return try result.get()
    }

    /// Every connector this fixture made, for ``with(adjust:_:)`` to shut down.
    package let made = Locked<[any TransportConnector]>([])

    package func tokenConnector(
        clock: @escaping @Sendable () -> Date = Fixture.tokenClock,
        adjust: (inout TransportConfiguration) -> Void = { _ in }
    ) throws -> TokenConnector {
        var transport = transport
        adjust(&transport)
        let connector = try TokenConnector(
            teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
            environment: environment, transport: transport, clock: clock)
        made.withLock { $0.append(connector) }
        return connector
    }

    package func certificateConnector(shutdownGracePeriod: Duration? = nil) throws -> CertificateConnector {
        var transport = transport
        if let shutdownGracePeriod { transport.shutdownGracePeriod = shutdownGracePeriod }
        let connector = try CertificateConnector(
            certificate: .pem(client.certificatePEM), privateKey: .pem(client.privateKeyPEM),
            environment: environment, transport: transport)
        made.withLock { $0.append(connector) }
        return connector
    }

    package func stop() async throws { try await server.stop() }
}

extension Device {
    /// A fixed test device.
    package static let test = try! Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
}

/// How much slower than usual this test process runs: 10 under ThreadSanitizer or
/// AddressSanitizer (found by their runtime's symbol), else 1. Tests that assert on deadlines scale
/// them by it, so `swift test --sanitize=thread` checks the same guarantees on a "slow machine".
package let sanitizerSlowdown: Double = {
    let handle = dlopen(nil, RTLD_NOW)
    defer { if let handle { dlclose(handle) } }
    return dlsym(handle, "__tsan_init") != nil || dlsym(handle, "__asan_init") != nil ? 10 : 1
}()

extension Duration {
    /// This duration on a sanitizer-slowed process.
    package var scaledForSanitizers: Duration { self * sanitizerSlowdown }
}

extension Int {
    /// How many sends a test that makes thousands of them makes on a sanitizer-slowed process: a
    /// fifth. The sanitizer watches every path the test drives as closely with a fifth of the
    /// sends; the full count's statistics (how rare a lost refusal is) are the normal run's to
    /// check.
    package var scaledDownForSanitizers: Int { sanitizerSlowdown > 1 ? Swift.max(1, self / 5) : self }
}
