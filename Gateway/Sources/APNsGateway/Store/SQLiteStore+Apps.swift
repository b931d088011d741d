import Foundation
import GRDB

// Apps' limits and their device-send budgets (`GatewayStore`), on SQLite.
extension SQLiteStore {
    package func appSettings() async throws -> [AppSettings] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM app_settings ORDER BY app").map { row in
                AppSettings(
                    app: row["app"], credential: row["credential"], maximumQueued: row["max_queued"],
                    deviceSendsPerSecond: row["device_sends_per_second"])
            }
        }
    }

    package func setLimits(of app: String, maximumQueued: Int?, deviceSendsPerSecond: Double?) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO app_settings(app, max_queued, device_sends_per_second) VALUES (?, ?, ?)
                    ON CONFLICT (app) DO UPDATE SET max_queued = excluded.max_queued,
                        device_sends_per_second = excluded.device_sends_per_second
                    """, arguments: [app, maximumQueued, deviceSendsPerSecond])
        }
    }

    package func takeDeviceSends(app: String, devices: Int, rate: Double, now: Date) async throws -> Double? {
        try await pool.write { db in
            let now = now.timeIntervalSince1970
            let tokens =
                try Row.fetchOne(db, sql: "SELECT tokens, at FROM app_rates WHERE app = ?", arguments: [app]).map {
                    DeviceSendBudget.refilled(tokens: $0["tokens"], at: $0["at"], now: now, rate: rate)
                } ?? rate
            guard tokens > 0 else { return DeviceSendBudget.wait(tokens: tokens, rate: rate) }
            try db.execute(
                sql: """
                    INSERT INTO app_rates(app, tokens, at) VALUES (?, ?, ?)
                    ON CONFLICT (app) DO UPDATE SET tokens = excluded.tokens, at = max(at, excluded.at)
                    """, arguments: [app, tokens - Double(devices), now])
            return nil
        }
    }

    package func returnDeviceSends(app: String, devices: Int, rate: Double) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE app_rates SET tokens = min(?, tokens + ?) WHERE app = ?",
                arguments: [rate, Double(devices), app])
        }
    }

    package func queueDepth(of app: String) async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM counters WHERE name = ?", arguments: ["app:" + app]) ?? 0
        }
    }
}
