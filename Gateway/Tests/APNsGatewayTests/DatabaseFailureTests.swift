import APNsGateway
import APNsTesting
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

/// A database error says what the database said (SQLSTATE and message, SQLite's code), never the
/// placeholder postgres-nio describes every error with; and a route that meets one answers
/// problem+json, 503 with `Retry-After` when trying again can help, counted and logged.
@Suite struct DatabaseFailureTests {
    /// The error a statement meets, run on the queue's database as another program would.
    static func error(running statements: [String], on queue: TestStore) async -> (any Error)? {
        do {
            try await queue.execute(statements)
            return nil
        } catch {
            return error
        }
    }

    @Test func postgreSQLErrorsAreReadByTheirSQLSTATEAndMessage() async throws {
        let queue = try await TestStore(.postgres)
        let division = try #require(await Self.error(running: ["SELECT 1/0"], on: queue))
        #expect("\(division)".contains("Generic description"), "postgres-nio's own description says nothing")
        let failure = DatabaseFailure(division)
        #expect(failure.description == "PostgreSQL 22012: division by zero")
        #expect(failure.code == "22012")
        #expect(failure.kind == .failed)

        // A database that has turned read-only (a demoted primary after a failover) is one to
        // try again later; new connections see the setting.
        let name = String(queue.url.split(separator: "/").last?.split(separator: "?").first ?? "")
        try await queue.execute(["ALTER DATABASE \(name) SET default_transaction_read_only = on"])
        let readOnly = DatabaseFailure(
            try #require(await Self.error(running: ["CREATE TABLE t (a integer)"], on: queue)))
        #expect(readOnly.description == "PostgreSQL 25006: cannot execute CREATE TABLE in a read-only transaction")
        #expect(readOnly.kind == .unavailable)
        await queue.remove()
    }

    @Test func sqliteErrorsAreReadByTheirResultCode() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("failure-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = try DatabaseQueue(path: folder.appendingPathComponent("full.sqlite").path)
        // A file that may not grow past its pages: as a full disk looks to SQLite.
        let full = try await database.writeWithoutTransaction { db -> (any Error)? in
            try db.execute(sql: "CREATE TABLE t (a BLOB)")
            try db.execute(sql: "PRAGMA max_page_count = 3")
            do {
                try db.execute(sql: "INSERT INTO t VALUES (zeroblob(100000))")
                return nil
            } catch {
                return error
            }
        }
        let failure = DatabaseFailure(try #require(full))
        #expect(failure.description == "SQLite error 13 (database or disk is full): database or disk is full")
        #expect(failure.code == "13")
        #expect(failure.kind == .unavailable)
    }

    /// A POST while the database is read-only: 503 with `Retry-After`, problem+json that says the
    /// notification may or may not be queued and how to retry it safely; counted; logged at
    /// `error` with the SQLSTATE. An unknown path is problem+json too.
    @Test func aRouteThatMeetsTheDatabaseAnswersProblemJSON() async throws {
        let setup = try await GatewayAPITests.Setup.start(.postgres)
        let reports = AwaitableReports()
        let api = GatewayAPI(store: setup.store, authenticationMethod: .token, metricsFactory: reports.metrics)
        let name = String(setup.queue.url.split(separator: "/").last?.split(separator: "?").first ?? "")
        try await setup.queue.execute([
            "ALTER DATABASE \(name) SET default_transaction_read_only = on",
            // The pool's open connections end; new ones are read-only.
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()",
        ])
        let key = setup.key
        let body = GatewayAPITests.alert(to: [GatewayAPITests.token])
        let answers = try await Application(router: api.router(), logger: reports.logger).test(.router) { client in
            // A request on a connection that was ended meets that first; the pool reconnects.
            var answers: [(HTTPResponse.Status, String?, String?, String)] = []
            for _ in 0..<5 {
                let answer = try await client.execute(
                    uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(key),
                    body: ByteBuffer(string: body)
                ) {
                    ($0.status, $0.headers[.retryAfter], $0.headers[.contentType], String(buffer: $0.body))
                }
                answers.append(answer)
                if answer.3.contains("(25006)") { break }
            }
            let unknown = try await client.execute(uri: "/v2/nothing", method: .get) {
                ($0.status, $0.headers[.retryAfter], $0.headers[.contentType], String(buffer: $0.body))
            }
            return answers + [unknown]
        }
        let posts = answers.dropLast()
        for answer in posts {
            #expect(answer.0 == .serviceUnavailable)
            #expect(answer.1 == "2")
            #expect(answer.2 == "application/problem+json")
            #expect(answer.3.contains(#""detail":"the queue's database is unavailable"#))
            #expect(
                answer.3.contains(
                    "The notification may or may not have been queued: the same request with the same Idempotency-Key queues it at most once."
                ))
        }
        #expect(
            posts.last?.3
                == #"{"detail":"the queue's database is unavailable (25006); try again after Retry-After. The notification may or may not have been queued: the same request with the same Idempotency-Key queues it at most once.","status":503,"title":"Service Unavailable","type":"about:blank"}"#
        )
        #expect(reports.counter("apns_gateway_requests_refused_total", ["status": "503"]) == Int64(posts.count))
        let logged = reports.lines("a request met a database failure")
        #expect(logged.count == posts.count)
        #expect(
            logged.last?.metadata["error"]
                // The insert is one statement (its CTEs insert), whose outer command is a SELECT.
                == .string("PostgreSQL 25006: cannot execute SELECT in a read-only transaction"))
        #expect(logged.allSatisfy { $0.level == .error })

        let unknown = try #require(answers.last)
        #expect(unknown.0 == .notFound)
        #expect(unknown.2 == "application/problem+json")
        #expect(
            unknown.3
                == #"{"detail":"no such path: the gateway serves /v1/notifications, /v1/notification-batches, /v1/unregistered, /healthz, /readyz and /metrics","status":404,"title":"Not Found","type":"about:blank"}"#
        )
        #expect(reports.counter("apns_gateway_requests_refused_total", ["status": "404"]) == 1)
        try await setup.stop()
    }
}
