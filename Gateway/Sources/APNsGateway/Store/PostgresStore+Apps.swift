import APNs
import Foundation
import Logging
import PostgresNIO

// Apps' settings, their shared device-sends budget and their depth.

extension PostgresStore {
    package func appSettings() async throws -> [AppSettings] {
        var settings: [AppSettings] = []
        for try await (app, credential, maximum, rate) in try await client.query(
            "SELECT app, credential, max_queued::int8, device_sends_per_second FROM app_settings ORDER BY app",
            logger: logger
        ).decode((String, String?, Int?, Double?).self) {
            settings.append(
                AppSettings(app: app, credential: credential, maximumQueued: maximum, deviceSendsPerSecond: rate))
        }
        return settings
    }

    package func setLimits(of app: String, maximumQueued: Int?, deviceSendsPerSecond: Double?) async throws {
        try await client.query(
            """
            INSERT INTO app_settings(app, max_queued, device_sends_per_second)
            VALUES (\(app), \(maximumQueued), \(deviceSendsPerSecond))
            ON CONFLICT (app) DO UPDATE SET max_queued = excluded.max_queued,
                device_sends_per_second = excluded.device_sends_per_second
            """, logger: logger)
    }

    package func takeDeviceSends(app: String, devices: Int, rate: Double, now: Date) async throws -> Double? {
        let now = now.timeIntervalSince1970
        let devices = Double(devices)
        // ``DeviceSendBudget/refilled(tokens:at:now:rate:)`` in SQL: the row is locked by the
        // upsert, so instances taking at once each see the other's take.
        let taken = try await client.query(
            """
            INSERT INTO app_rates AS r (app, tokens, at) VALUES (\(app), \(rate) - \(devices), \(now))
            ON CONFLICT (app) DO UPDATE SET
                tokens = least(\(rate), r.tokens + greatest(0, \(now) - r.at) * \(rate)) - \(devices),
                at = greatest(r.at, \(now))
            WHERE least(\(rate), r.tokens + greatest(0, \(now) - r.at) * \(rate)) > 0
            RETURNING true
            """, logger: logger
        ).collect()
        guard taken.isEmpty else { return nil }
        let row = try await client.query(
            "SELECT tokens, at FROM app_rates WHERE app = \(app)", logger: logger
        ).collect().first
        let (tokens, at) = try row?.decode((Double, Double).self) ?? (0, now)
        return DeviceSendBudget.wait(
            tokens: DeviceSendBudget.refilled(tokens: tokens, at: at, now: now, rate: rate), rate: rate)
    }

    package func returnDeviceSends(app: String, devices: Int, rate: Double) async throws {
        try await client.query(
            "UPDATE app_rates SET tokens = least(\(rate), tokens + \(Double(devices))) WHERE app = \(app)",
            logger: logger)
    }

    package func queueDepth(of app: String) async throws -> Int {
        try await client.query(Self.appDepthQuery(app), logger: logger).collect().first?.decode(Int.self) ?? 0
    }

    /// `app`'s unfinished device-sends: the sum of its rows of `app_depth`.
    static func appDepthQuery(_ app: String) -> PostgresQuery {
        "SELECT coalesce(sum(value), 0)::int8 FROM app_depth WHERE app = \(app)"
    }
}
