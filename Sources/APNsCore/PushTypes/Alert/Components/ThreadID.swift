/// Groups notifications into a thread in Notification Center (`thread-id`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); ThreadID("chat-42") }
/// ```
public struct ThreadID: AlertNotificationComponent, Hashable {
    /// The text, as sent.
    public let value: String
    /// A thread identifier that groups notifications.
    public init(_ value: String) { self.value = value }
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.threadID, value, name: "ThreadID") }
}
