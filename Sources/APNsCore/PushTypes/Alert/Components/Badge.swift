/// The number on the app icon; 0 clears it, negative numbers are a validation error (`badge`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); Badge(3) }
/// ```
public struct Badge: AlertNotificationComponent, Hashable {
    public let value: Int
    public init(_ value: Int) { self.value = value }
    public func apply(to payload: inout AlertPayload) { payload.set(\.badge, value, name: "Badge") }
}
