import Foundation
import GRDB
import PostgresNIO

/// What a database error says, in words an operator can act on, and whether trying again later
/// can help: the one reading of the stores' errors for logs, `/readyz` and the API's answers.
///
/// postgres-nio describes every error with one placeholder sentence (so that nothing it holds
/// reaches an end user by accident), which made "too many connections" and "disk full" read the
/// same. This reads what is safe: PostgreSQL's SQLSTATE and its message, postgres-nio's error
/// code and the network error under it, SQLite's result code and message. Never a statement's
/// bind values or PostgreSQL's `DETAIL` (which can quote a row's values), so never a token or a
/// key.
///
/// Thread safety: a value type; `Sendable`.
public struct DatabaseFailure: Sendable, CustomStringConvertible {
    /// Whether waiting and trying again can help.
    package enum Kind: String, Sendable {
        /// The database cannot serve now: unreachable, out of connections or disk, shutting down,
        /// read-only after a failover, busy, or a transaction it rolled back (deadlock,
        /// serialization). A request may be tried again after a while.
        case unavailable
        /// Anything else: a fault the same request meets again.
        case failed
    }

    package let kind: Kind
    /// PostgreSQL's SQLSTATE (`53300`), or SQLite's primary result code (`13`), when there is one.
    package let code: String?
    /// For example "PostgreSQL 53300: sorry, too many clients already", "PostgreSQL connection
    /// serverClosedConnection", "SQLite error 13 (database or disk is full): database or disk is
    /// full".
    public let description: String

    package init(_ error: any Error) {
        switch error {
        case let error as PostgresTransactionError:
            // The error that ended the transaction: its closure's, else BEGIN's or COMMIT's.
            if let inner = error.closureError ?? error.beginError ?? error.commitError {
                self.init(inner)
            } else {
                self.init(kind: .failed, code: nil, description: "PostgreSQL transaction failed")
            }
        case let error as PSQLError:
            self.init(postgres: error)
        case let error as DatabaseError:
            let busy: [ResultCode] = [.SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_CANTOPEN]
            self.init(
                kind: busy.contains(error.resultCode) ? .unavailable : .failed, code: "\(error.resultCode.rawValue)",
                description: "SQLite error \(error.resultCode): \(error.message ?? "no message")")
        case let error as StoreError:
            self.init(kind: .failed, code: nil, description: error.description)
        default:
            self.init(kind: .failed, code: nil, description: "\(type(of: error)): \(error)")
        }
    }

    /// `error` as a ``StoreError`` that says what the database said, when it is the database's;
    /// any other error as it is. For errors that end a command, printed by its caller.
    package static func readable(_ error: any Error) -> any Error {
        switch error {
        case is PSQLError, is PostgresTransactionError, is DatabaseError:
            StoreError("the queue's database: \(DatabaseFailure(error))")
        default: error
        }
    }

    init(kind: Kind, code: String?, description: String) {
        self.kind = kind
        self.code = code
        self.description = description
    }

    private init(postgres error: PSQLError) {
        if error.code == .server, let state = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "no message"
            self.init(
                kind: Self.retryableClasses.contains(String(state.prefix(2))) || Self.retryableStates.contains(state)
                    ? .unavailable : .failed,
                code: state, description: "PostgreSQL \(state): \(message)")
            return
        }
        var description = "PostgreSQL \(error.code)"
        if let underlying = error.underlying { description += ": \(underlying)" }
        let lost: Set<PSQLError.Code> = [
            .serverClosedConnection, .clientClosedConnection, .connectionError, .poolClosed, .uncleanShutdown,
            .queryCancelled,
        ]
        self.init(kind: lost.contains(error.code) ? .unavailable : .failed, code: nil, description: description)
    }

    /// SQLSTATE classes where trying again helps: 08 connection exception, 40 transaction
    /// rollback (deadlock, serialization), 53 insufficient resources (disk full, out of memory,
    /// too many connections), 57 operator intervention (shutdown, cancelled), 58 system error.
    static let retryableClasses: Set<String> = ["08", "40", "53", "57", "58"]
    /// A read-only transaction: a standby promoted late, or a primary demoted by a failover.
    static let retryableStates: Set<String> = ["25006"]
}
