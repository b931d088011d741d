/// Groups notifications into a thread in Notification Center (`thread-id`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); ThreadID("chat-42") }
/// ```
public struct ThreadID: AlertNotificationComponent, Hashable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public func apply(to payload: inout AlertPayload) { payload.set(\.threadID, value, name: "ThreadID") }
}
