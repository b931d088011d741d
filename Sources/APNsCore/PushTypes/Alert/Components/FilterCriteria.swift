/// The Focus filter criteria this notification matches (`filter-criteria`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); FilterCriteria("work") }
/// ```
public struct FilterCriteria: AlertNotificationComponent, Hashable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public func apply(to payload: inout AlertPayload) { payload.set(\.filterCriteria, value, name: "FilterCriteria") }
}
