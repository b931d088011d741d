/// The database a gateway runs on, as an application that embeds the gateway chooses it: SQLite
/// (``SQLiteStore``, one file, one machine) or PostgreSQL (``PostgresStore``, several instances on
/// one database). What the gateway does with it (the queue, apps and keys, credentials, instances)
/// is the package's own protocol, `GatewayStore`, which its tests and its command reach: an
/// embedder picks one of the two, and does not write a third.
///
/// ```swift
/// let database = GatewayDatabase.sqlite(try SQLiteStore(path: "queue.sqlite"))
/// try await database.prepare()
/// ```
///
/// Thread safety: `Sendable`; both stores are safe to use from any number of tasks.
public struct GatewayDatabase: Sendable {
    package let store: any GatewayStore

    package init(_ store: any GatewayStore) { self.store = store }

    /// One SQLite file: the default, for one gateway process.
    public static func sqlite(_ store: SQLiteStore) -> GatewayDatabase { GatewayDatabase(store) }

    /// PostgreSQL, for several gateway instances that share one queue. Run the store as a service
    /// (its connection pool) beside the gateway's.
    public static func postgres(_ store: PostgresStore) -> GatewayDatabase { GatewayDatabase(store) }

    /// Creates the schema, or upgrades it through its numbered migrations; throws a
    /// ``StoreError`` for a database a newer gateway has upgraded. Safe to call on every start.
    public func prepare() async throws { try await store.prepare() }
}
