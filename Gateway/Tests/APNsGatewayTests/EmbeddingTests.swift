import APNs
import APNsGateway
import APNsMockServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// The gateway as an application embeds it, through its public surface alone (Docs/Architecture.md,
/// "The gateway's surface"): a database chosen and prepared, credential connectors with a fallback
/// connector of the application's own, a dispatcher and the API, run as services and served. The
/// API key is added as `apns-gateway add-key` adds it, which is not the embedder's surface.
@Suite struct EmbeddingTests {
    @Test func anEmbedderServesAndSendsThroughThePublicSurface() async throws {
        let signingKey = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")
        let server = try await MockAPNsServer.start(.init(signingKeys: [signingKey]))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("embed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // What an embedder writes.
        let database = GatewayDatabase.sqlite(try SQLiteStore(path: folder.appendingPathComponent("q.sqlite").path))
        try await database.prepare()
        var transport = TransportConfiguration()
        // A pool of one: a loaded machine can make the mock's streams cycle slowly, and a test
        // that paces its sends must not meet a connection added for it.
        transport.additionalConnectionsWhenSlow = 0
        transport.trustedCertificateAuthority = .pem(server.certificateAuthorityPEM)
        let connector = try TokenConnector(
            teamID: signingKey.teamID, keyID: signingKey.keyID, key: .pem(signingKey.privateKeyPEM),
            environment: .custom(host: server.host, port: server.port), transport: transport)
        let logger = Logger(label: "embedder")
        let connectors = CredentialConnectors(
            database: database, vault: nil,
            fallback: .init(connector: AnyConnector(connector), environment: .sandbox), logger: logger)
        try await connectors.refresh()
        var sending = Dispatcher.Configuration()
        sending.pollInterval = .milliseconds(50)
        let dispatcher = Dispatcher(database: database, connectors: connectors, configuration: sending, logger: logger)
        let api = GatewayAPI(database: database, connectors: connectors, dispatcher: dispatcher)

        // What `apns-gateway add-key` does (package).
        let key = GatewayAPI.makeAPIKey()
        try await database.store.addAPIKey(
            APIKey(
                name: "embedder", hash: GatewayAPI.hash(apiKey: key), apps: ["com.example.app"], requestsPerSecond: 100)
        )

        let token = String(repeating: "ab", count: 32)
        let running = Task {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await dispatcher.run() }
                group.addTask { try await connectors.run() }
            }
        }
        try await Application(router: api.router()).test(.router) { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: [.authorization: "Bearer \(key)"],
                body: ByteBuffer(
                    string:
                        #"{"push-type":"alert","bundle-id":"com.example.app","alert":{"body":"Hi"},"devices":["\#(token)"]}"#
                )
            ) { response in
                #expect(response.status == .accepted)
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
        #expect(await Poll.until(within: .seconds(30)) { !server.requests.isEmpty })
        #expect(server.requests.first?.path == "/3/device/\(token)")
        running.cancel()
        _ = try? await running.value
        await connector.shutdown(gracePeriod: .zero)
        try await server.stop()
    }
}
