/// The window or content to bring forward when the notification is opened (`target-content-id`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); TargetContentID("doc-7") }
/// ```
public struct TargetContentID: AlertNotificationComponent, Hashable {
    public let value: String
    public init(_ value: String) { self.value = value }
    public func apply(to payload: inout AlertPayload) { payload.set(\.targetContentID, value, name: "TargetContentID") }
}
