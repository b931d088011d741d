/// The notification category, which selects its actions (`category`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); Category("GAME_INVITATION") }
/// ```
public struct Category: AlertNotificationComponent, Hashable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public func apply(to payload: inout AlertPayload) { payload.set(\.category, value, name: "Category") }
}
