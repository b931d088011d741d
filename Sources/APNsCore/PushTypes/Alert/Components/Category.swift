/// The notification category, which selects its actions (`category`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); Category("GAME_INVITATION") }
/// ```
public struct Category: AlertNotificationComponent, Hashable {
    /// The text, as sent.
    public let value: String
    /// A category by identifier.
    public init(_ value: String) { self.value = value }
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.category, value, name: "Category") }
}
