/// The window or content to bring forward when the notification is opened (`target-content-id`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); TargetContentID("doc-7") }
/// ```
public struct TargetContentID: AlertNotificationComponent, Hashable {
    /// The text, as sent.
    public let value: String
    /// A target content identifier.
    public init(_ value: String) { self.value = value }
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.targetContentID, value, name: "TargetContentID") }
}
