import Foundation

/// The devices APNs told a send to stop using, collected so you can persist them.
///
/// Two kinds, kept apart because they call for different actions:
/// - ``unregistered``: 410 `Unregistered`. The app was removed or the token is no longer valid for
///   the topic. Forget the token — unless the app registered it with your server again after
///   APNs' timestamp (``Unregistered/shouldForget(lastRegisteredAt:)``).
/// - ``misdirected``: 400 `BadDeviceToken` or `DeviceTokenNotForTopic`. Usually a configuration
///   mistake rather than a dead token — a sandbox token sent to production (or the reverse), or a
///   token from another app — so check the connector's environment and topic before deleting
///   anything.
///
/// A bulk `send` fills ``BulkSendSummary/tokensToForget``; with `bulkSendOutcomes` or single sends,
/// call ``collect(_:)`` yourself.
///
/// ```swift
/// let summary = try await send(notification, via: connector, to: devices)
/// for entry in summary.tokensToForget.unregistered
/// where entry.shouldForget(lastRegisteredAt: try await store.registrationDate(of: entry.device)) {
///     try await store.delete(entry.device)
/// }
/// ```
///
/// Thread safety: a value type; `Sendable`.
public struct TokensToForget: Hashable, Sendable {
    /// A device APNs answered 410 `Unregistered` for.
    public struct Unregistered: Hashable, Sendable {
        /// The device.
        public let device: Device
        /// The last time APNs confirmed the token was no longer valid for the topic (the 410's
        /// `timestamp`); nil when APNs sent none.
        public let invalidSince: Date?

        /// A device and APNs' timestamp.
        public init(device: Device, invalidSince: Date?) {
            self.device = device
            self.invalidSince = invalidSince
        }

        /// Whether to stop using the token: yes, unless the app registered it with your server
        /// after ``invalidSince`` (a device that reinstalls the app may get the same token back).
        /// With no registration date, or no timestamp from APNs, the answer is yes.
        ///
        /// ```swift
        /// entry.shouldForget(lastRegisteredAt: registeredAt)   // registeredAt from your database
        /// ```
        public func shouldForget(lastRegisteredAt: Date?) -> Bool {
            guard let lastRegisteredAt, let invalidSince else { return true }
            return lastRegisteredAt <= invalidSince
        }
    }

    /// A device APNs refused as not a valid token for this topic or environment.
    public struct Misdirected: Hashable, Sendable {
        /// The device.
        public let device: Device
        /// `BadDeviceToken` or `DeviceTokenNotForTopic`.
        public let reason: APNsRejection.Reason

        /// A device and the reason APNs gave.
        public init(device: Device, reason: APNsRejection.Reason) {
            self.device = device
            self.reason = reason
        }
    }

    /// Devices answered 410 `Unregistered`, in the order the answers came.
    public private(set) var unregistered: [Unregistered] = []
    /// Devices answered `BadDeviceToken` or `DeviceTokenNotForTopic`, in the order the answers came.
    public private(set) var misdirected: [Misdirected] = []

    /// None yet.
    public init() {}

    /// Whether APNs told the send to stop using no device.
    public var isEmpty: Bool { unregistered.isEmpty && misdirected.isEmpty }

    /// The reasons that make a device ``Misdirected``.
    public static let misdirectedReasons: Set<APNsRejection.Reason> = [.badDeviceToken, .deviceTokenNotForTopic]

    /// Adds what a bulk send's outcome says about its device, if anything.
    public mutating func collect(_ outcome: BulkOutcome) {
        if let rejection = outcome.rejection { collect(rejection, for: outcome.device) }
    }

    /// Adds what a rejection says about `device`, if anything: for single sends.
    ///
    /// ```swift
    /// catch .rejected(let rejection) { forgotten.collect(rejection, for: device) }
    /// ```
    public mutating func collect(_ rejection: APNsRejection, for device: Device) {
        guard let reason = rejection.reason else { return }
        if reason == .unregistered {
            unregistered.append(Unregistered(device: device, invalidSince: rejection.timestamp))
        } else if TokensToForget.misdirectedReasons.contains(reason) {
            misdirected.append(Misdirected(device: device, reason: reason))
        }
    }
}
