import APNsGateway
import Foundation
import Logging
import GRDB
import PostgresNIO
import Testing

/// The two queue backends every store-facing test runs on.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// Where a test's PostgreSQL server is: `Scripts/test.sh` starts one and sets this.
    static var postgresURL: String {
        get throws {
            guard let url = ProcessInfo.processInfo.environment["APNS_GATEWAY_POSTGRES_URL"], !url.isEmpty else {
                throw SetupError(
                    """
                    these tests need PostgreSQL: run `export APNS_GATEWAY_POSTGRES_URL=$(bash Scripts/start-postgres.sh)` \
                    (a throwaway cluster on 127.0.0.1:55432), or run everything with `bash Scripts/test.sh`
                    """)
            }
            return url
        }
    }
}

struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A fresh, empty queue for one test: a new SQLite file, or a new PostgreSQL database. `url` is
/// what `apns-gateway --database` takes to open the same queue.
final class TestStore: Sendable {
    let backend: Backend
    let url: String
    let store: any GatewayStore
    private let folder: URL
    private let pool: Task<Void, Never>?
    private let database: String?

    /// `prepared: false` leaves the database empty, schema and all, for a test that makes its own.
    init(_ backend: Backend, prepared: Bool = true) async throws {
        self.backend = backend
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        switch backend {
        case .sqlite:
            url = folder.appendingPathComponent("queue.sqlite").path
            store = try SQLiteStore(path: url)
            pool = nil
            database = nil
        case .postgres:
            let base = try Backend.postgresURL
            let name =
                "gateway_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
            try await TestStore.admin(base) { client in
                try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
            }
            var components = URLComponents(string: base)
            components?.path = "/" + name
            components?.query = "sslmode=disable"
            url = components?.string ?? base
            let postgres = try PostgresStore(url: url, settleTime: .zero, logger: Logger(label: "test-postgres"))
            store = postgres
            pool = Task { await postgres.run() }
            database = name
        }
        if prepared { try await store.prepare() }
    }

    /// Runs SQL statements on the queue's database directly, as another program would.
    func execute(_ statements: [String]) async throws {
        _ = try await rows(statements, query: nil)
    }

    /// The rows of a query whose columns are all text (cast them), each row's columns joined by `|`.
    func rows(_ query: String) async throws -> [String] {
        try await rows([], query: query)
    }

    private func rows(_ statements: [String], query: String?) async throws -> [String] {
        switch backend {
        case .sqlite:
            let database = try DatabaseQueue(path: url)
            return try await database.write { db in
                for statement in statements { try db.execute(sql: statement) }
                guard let query else { return [] }
                return try Row.fetchAll(db, sql: query).map { row in
                    row.databaseValues.map { String.fromDatabaseValue($0) ?? "NULL" }.joined(separator: "|")
                }
            }
        case .postgres:
            let client = try PostgresStore.client(url: url, logger: Logger(label: "test-postgres-raw"))
            return try await PostgresStore.withRunning(client) { client in
                for statement in statements { try await client.query(PostgresQuery(unsafeSQL: statement)) }
                guard let query else { return [] }
                var result: [String] = []
                for try await row in try await client.query(PostgresQuery(unsafeSQL: query)) {
                    result.append(try row.map { try $0.decode(String?.self) ?? "NULL" }.joined(separator: "|"))
                }
                return result
            }
        }
    }

    /// Another store on the same queue (a second gateway instance's), run until `body` returns.
    func withSecondStore<T: Sendable>(_ body: @Sendable (any GatewayStore) async throws -> T) async throws -> T {
        switch backend {
        case .sqlite:
            return try await body(try SQLiteStore(path: url))
        case .postgres:
            let second = try PostgresStore(url: url, settleTime: .zero, logger: Logger(label: "test-postgres-2"))
            let pool = Task { await second.run() }
            defer { pool.cancel() }
            await second.untilRunning()
            return try await body(second)
        }
    }

    func remove() async {
        pool?.cancel()
        _ = await pool?.value
        if let database, let base = try? Backend.postgresURL {
            try? await TestStore.admin(base) { client in
                try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(database) WITH (FORCE)"))
            }
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs `body` with a client on the server's default database.
    private static func admin(_ url: String, _ body: @Sendable (PostgresClient) async throws -> Void) async throws {
        guard let components = URLComponents(string: url), let host = components.host else {
            throw SetupError("bad URL \(url)")
        }
        let client = PostgresClient(
            configuration: .init(
                host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
                password: components.password,
                database: String(components.path.dropFirst()), tls: .disable),
            backgroundLogger: Logger(label: "test-postgres-admin"))
        try await PostgresStore.withRunning(client) { client in try await body(client) }
    }
}

/// What many tests do to a store before what they check.
extension GatewayStore {
    /// Queues notification `id`, an alert to `tokens` for com.example.app under the key "app".
    func enqueueAlert(id: String, tokens: [String], traceParent: String? = nil) async throws -> EnqueueResult {
        try await enqueue(
            QueuedNotification(
                id: id, keyName: "app", pushType: "alert", app: "com.example.app",
                storedJSON: #"{"alert":"Hi","bundle-id":"com.example.app","push-type":"alert"}"#, tokens: tokens,
                createdAt: Date(), traceParent: traceParent),
            maximumQueueDepth: 1_000_000)
    }

    /// Claims up to `limit` device-sends for `owner` and writes each as accepted by APNs, as a
    /// sender would; returns how many outcomes were written.
    func claimAndAccept(owner: String, limit: Int, now: Date = Date()) async throws -> Int {
        let claimed = try await claim(owner: owner, limit: limit, now: now, leaseUntil: now + 60)
        let outcomes = claimed.flatMap { notification in
            notification.deliveries.map {
                DeliveryOutcome(
                    notificationID: notification.id, position: $0.position, token: $0.token, app: notification.app,
                    status: 200)
            }
        }
        return try await complete(outcomes, owner: owner, now: now)
    }
}

extension WebhookEndpoint {
    /// An endpoint of com.example.app called `name` at `url`, its `secret` (a new one by default)
    /// sealed by `vault`.
    static func test(
        _ name: String = "hooks", url: String, secret: WebhookSecret = .make(), vault: CredentialVault
    ) throws -> WebhookEndpoint {
        WebhookEndpoint(
            name: name, app: "com.example.app", url: url,
            sealed: try vault.seal(.webhookSecret(secret.text), for: WebhookEndpoint.sealingName(name), revision: 1),
            createdAt: Date())
    }
}
