import Foundation

// What the store keeps of apps and API keys: each app's settings and share of the queue, the
// rate budget its device-sends draw on, and the keys that may send to it.

/// Each app's device-sends a second (``AppSettings/deviceSendsPerSecond``), kept in the queue so
/// that every instance on it shares one budget: a bucket of one second's worth that a request may
/// overdraw, so that a request of more devices than a second allows is accepted when the bucket
/// is not in debt, and the next waits until the debt is paid back. On average `rate` a second, and
/// never a request refused for being larger than the rate.
///
/// Each store keeps the bucket as a row of `app_rates` (`tokens` left at `at`, seconds since
/// 1970) and refills and takes from it atomically (its `takeDeviceSends`; SQLite in one write
/// transaction, PostgreSQL in one statement that spells ``refilled(tokens:at:now:rate:)`` in SQL):
/// a request is taken when the refilled tokens are above zero, from a full bucket when the app
/// has no row yet. Instances' clocks may differ a little: time before `at` refills nothing, and
/// `at` never goes back. On PostgreSQL the table is unlogged (no write-ahead log, so no flush per
/// request): after a crash, or on a standby, every app starts from a full bucket.
package enum DeviceSendBudget {
    /// The tokens a bucket holds at `now`: what it held at `at` plus `rate` a second since, at
    /// most one second's worth.
    package static func refilled(tokens: Double, at: Double, now: Double, rate: Double) -> Double {
        min(rate, tokens + max(0, now - at) * rate)
    }

    /// The seconds a bucket holding `tokens` (zero or less: in debt) needs to hold one again.
    package static func wait(tokens: Double, rate: Double) -> Double { max(0, (1 - tokens) / rate) }
}

/// Which apps a claim may take device-sends of.
package struct AppFilter: Sendable {
    /// Whether the app's device-sends may be claimed.
    package let admits: @Sendable (String) -> Bool

    package init(_ admits: @escaping @Sendable (String) -> Bool) { self.admits = admits }

    /// Every app.
    package static let all = AppFilter { _ in true }
}

/// An app's own settings: the credential it is bound to and its limits (nil: none).
package struct AppSettings: Sendable, Hashable {
    /// The bundle id (or MDM topic).
    package var app: String
    /// The stored credential that serves it; nil for the gateway's credential flags.
    package var credential: String?
    /// Unfinished device-sends it may have in the queue; a request past it is refused (429).
    package var maximumQueued: Int?
    /// Device-sends a second it may have accepted, on average, by every instance on the queue
    /// together (``DeviceSendBudget``).
    package var deviceSendsPerSecond: Double?

    package init(app: String, credential: String? = nil, maximumQueued: Int? = nil, deviceSendsPerSecond: Double? = nil)
    {
        self.app = app
        self.credential = credential
        self.maximumQueued = maximumQueued
        self.deviceSendsPerSecond = deviceSendsPerSecond
    }
}

/// An API key as stored: a name, the SHA-256 of the secret, the apps it may send to, and its rate.
package struct APIKey: Sendable, Hashable {
    /// A name for logs and metrics (never the secret).
    package var name: String
    /// Lower-case hex SHA-256 of the secret.
    package var hash: String
    /// Bundle ids (MDM topics for mdm) the key may send to.
    package var apps: Set<String>
    /// Requests per second allowed (a token bucket with this rate and a burst of twice it).
    package var requestsPerSecond: Double

    package init(name: String, hash: String, apps: Set<String>, requestsPerSecond: Double) {
        self.name = name
        self.hash = hash
        self.apps = apps
        self.requestsPerSecond = requestsPerSecond
    }
}
