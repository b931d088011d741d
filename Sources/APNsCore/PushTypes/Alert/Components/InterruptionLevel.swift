/// How strongly the notification may interrupt the user (`interruption-level`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("Your ride is here"); InterruptionLevel.timeSensitive }
/// ```
public struct InterruptionLevel: AlertNotificationComponent, Hashable, Sendable {
    /// The value as APNs writes it.
    public let rawValue: String
    private init(rawValue: String) { self.rawValue = rawValue }

    /// Added to the list silently.
    public static let passive = InterruptionLevel(rawValue: "passive")
    /// The default: sound and screen as the user's settings allow.
    public static let active = InterruptionLevel(rawValue: "active")
    /// May break through Focus; needs the Time Sensitive capability.
    public static let timeSensitive = InterruptionLevel(rawValue: "time-sensitive")
    /// Breaks through silent mode; needs Apple's critical-alert entitlement.
    public static let critical = InterruptionLevel(rawValue: "critical")

    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) {
        payload.set(\.interruptionLevel, self, name: "InterruptionLevel")
    }
}
