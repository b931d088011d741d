import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The shared queue: PostgreSQL (postgres-nio's connection pool), for several gateway instances
/// on one database. Work is claimed with `FOR UPDATE SKIP LOCKED`, so two live instances never
/// claim the same device-send, and each claim carries a lease, so a crashed instance's work is
/// taken over once its lease expires. The unregistered list is shared.
///
/// A claim's lease is the later of its own (set when it was claimed) and its instance's, which the
/// heartbeat renews in the instance's one row (`instances.lease_until`): renewing every claimed
/// device-send each heartbeat rewrote thousands of rows a second. No index reads a device-send's
/// state or lease, so a claim rewrites its row in place (a heap-only update, in the room
/// `fillfactor = 50` leaves on each page), and the only index an unfinished row is in,
/// `deliveries_by_app` (by app and `available_at`, which a claim leaves as it is), is the one the
/// claim reads: each app's rows up to the due time, so rows waiting out a back-off or a pause are
/// never read.
///
/// It is a `Service`: run it (in the gateway's `ServiceGroup`, or a task of its own) and then
/// ``prepare()`` it, which waits until ``run()`` has started; its connections close when ``run()``
/// returns.
///
/// The queue depth is kept, not counted: every enqueue adds its device-sends and every finish
/// subtracts its own, in the same statement, to one of the 16 rows of `queue_depth` chosen at
/// random, so that instances writing at once seldom wait for the same row; the depth is their sum,
/// whose cost does not grow with the backlog. Back-pressure reads the depth as last read (read
/// again once it is a moment old) plus what this instance queued since, so several instances
/// together may exceed `maximumQueueDepth` by what they accept meanwhile. An app's quota is exact:
/// its enqueues take turns (``insert(_:withinQuota:logger:)``).
///
/// Thread safety: `Sendable`; the pool serves any number of tasks, and a `Mutex` guards the
/// cached depth.
public final class PostgresStore: GatewayStore, Service {
    package let client: PostgresClient
    package let logger: Logger
    /// The last count of unfinished device-sends, when it was taken, plus what was queued since.
    let depth = Mutex<(count: Int, at: Date)?>(nil)
    /// The time it reads (``GatewayClock``): how old the cached depth is, when a reported token has
    /// settled.
    let clock: any GatewayClock
    /// How long a report to the unregistered list is held back from readers, so that one whose
    /// transaction commits late (its sequence number was taken earlier) is not skipped by a reader
    /// already past it.
    let settleTime: Double
    /// Opens when ``run()`` starts the pool. ``prepare()``, every user's first call, waits for it:
    /// a caller that starts `run()` in a task and prepares at once (as `apns-gateway` does) used to
    /// lease a connection before the pool ran, which postgres-nio serves anyway but logs as a
    /// warning ("`PostgresClient.run()` hasn't been called yet") on every such start.
    let started = StartGate()

    /// A store on the database `url` names: `postgres://user[:password]@host[:port]/database`,
    /// with `?sslmode=` as libpq reads it (``client(url:maximumConnections:logger:)``), through at
    /// most `maximumConnections` connections.
    public init(
        url: String, maximumConnections: Int = 20, settleTime: Duration = .seconds(5), logger: Logger,
        clock: any GatewayClock = SystemGatewayClock()
    ) throws {
        client = try Self.client(url: url, maximumConnections: maximumConnections, logger: logger)
        self.logger = logger
        self.settleTime = settleTime.seconds
        self.clock = clock
    }

    /// `url` with `password` in it, as ``client(url:maximumConnections:logger:)`` reads it back
    /// (percent-encoded where the password has characters a URL's user part cannot hold): for a
    /// password kept in a file, out of the environment and the process's arguments. `url` must
    /// have none of its own.
    package static func url(_ url: String, password: String) throws -> String {
        guard var components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? "")
        else {
            throw StoreError(
                "\(url.prefix(11))… is not a PostgreSQL URL: give postgres://user@host[:port]/database")
        }
        guard components.password == nil else {
            throw StoreError(
                "the URL has a password and the password file gives one: give the URL without it (postgres://user@host/database)"
            )
        }
        components.password = password
        guard let withPassword = components.string else {
            throw StoreError("the password cannot be put in the database URL")
        }
        return withPassword
    }

    /// A connection pool (not yet running) on the database `url` names; the one reader of the URL.
    ///
    /// `sslmode` takes libpq's values, with one difference: `disable` (no TLS), `prefer` (the
    /// default: TLS when the server offers it), `require` (TLS or no connection), `verify-ca` (and
    /// the server's certificate chains to a trusted root) and `verify-full` (and it names the
    /// host). Whenever TLS is used the certificate is verified, name included, except under
    /// `verify-ca`: libpq's `prefer` and `require` accept any certificate, which lets anyone on the
    /// path read the queue. `sslrootcert=PATH` (PEM) replaces the system's roots, for a database
    /// whose certificate a private authority signed.
    package static func client(url: String, maximumConnections: Int = 2, logger: Logger) throws -> PostgresClient {
        guard let components = URLComponents(string: url),
            ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw StoreError(
                "\(url.prefix(11))… is not a PostgreSQL URL: give postgres://user[:password]@host[:port]/database")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let query = components.queryItems ?? []
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if let roots = query.last(where: { $0.name == "sslrootcert" })?.value {
            guard FileManager.default.isReadableFile(atPath: roots) else {
                throw StoreError(
                    "sslrootcert=\(roots) cannot be read: give the PEM file of the authority that signed the database's certificate"
                )
            }
            tlsConfiguration.trustRoots = .file(roots)
        }
        let tls: PostgresClient.Configuration.TLS
        switch query.last(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(tlsConfiguration)
        case "require", "verify-full": tls = .require(tlsConfiguration)
        case "verify-ca":
            tlsConfiguration.certificateVerification = .noHostnameVerification
            tls = .require(tlsConfiguration)
        case let other:
            throw StoreError(
                "sslmode=\(other) is not one of disable, prefer, require, verify-ca, verify-full (the database URL's query)"
            )
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password,
            database: database.isEmpty ? nil : database,
            tls: tls)
        configuration.options.maximumConnections = maximumConnections
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// Runs `client` (a pool not yet running, such as ``client(url:maximumConnections:logger:)``
    /// makes) while `body` uses it, and stops it when `body` returns; `body` starts once the pool
    /// runs (see ``prepare()``). For tools and tests that need a pool of their own for a while.
    package static func withRunning<T: Sendable>(
        _ client: PostgresClient, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let started = StartGate()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await started.opening(client.run) }
            defer { group.cancelAll() }
            await started.wait()
            return try await body(client)
        }
    }

    /// Runs the connection pool until cancelled or shut down gracefully.
    public func run() async {
        await cancelWhenGracefulShutdown { await self.started.opening(self.client.run) }
    }

    /// Returns once ``run()`` has started the pool (or the calling task is cancelled): for a user
    /// of a second store on a prepared queue, which does not call ``prepare()``.
    package func untilRunning() async {
        await started.wait()
    }

    /// Applies the schema's missing migrations, numbered and recorded in `gateway_schema`. Waits
    /// for ``run()`` to have started the pool (or for the calling task's cancellation).
    package func prepare() async throws {
        await started.wait()
        try await Migrations.migrate(client, logger: logger)
    }
}

/// A gate that opens once: ``wait()`` returns when ``open()`` has been called, or at once when the
/// waiting task is (or becomes) cancelled.
///
/// Thread safety: `Sendable`; a `Mutex` guards whether it is open and who waits.
final class StartGate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Opens the gate and runs `body` (a pool's `run()`): whoever waits starts once the pool is
    /// about to accept work.
    func opening(_ body: () async -> Void) async {
        open()
        await body()
    }

    func wait() async {
        let id = state.withLock { state -> Int? in
            guard !state.isOpen else { return nil }
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.isOpen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
