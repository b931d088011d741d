import Foundation
import GRDB

/// The embedded queue: one SQLite file in WAL mode (GRDB's `DatabasePool`), for one gateway
/// instance. Writes are serialised by SQLite; a claim is one transaction, so two senders in the
/// same process never claim the same device-send.
///
/// Thread safety: `Sendable`; GRDB runs every access on its own dispatch queues, never on a Swift
/// concurrency thread.
public final class SQLiteStore: GatewayStore {
    package let pool: DatabasePool

    /// Opens (creating if needed) the database at `path`.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
    }

    /// Applies the schema's missing migrations, recorded by GRDB's `DatabaseMigrator`.
    package func prepare() async throws {
        try await Migrations.migrate(pool)
    }
}
