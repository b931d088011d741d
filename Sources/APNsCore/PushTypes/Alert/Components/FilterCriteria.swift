/// The Focus filter criteria this notification matches (`filter-criteria`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); FilterCriteria("work") }
/// ```
public struct FilterCriteria: AlertNotificationComponent, Hashable {
    /// The text, as sent.
    public let value: String
    /// Filter criteria for Focus.
    public init(_ value: String) { self.value = value }
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.filterCriteria, value, name: "FilterCriteria") }
}
