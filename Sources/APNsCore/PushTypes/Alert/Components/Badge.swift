/// The number on the app icon; 0 clears it, negative numbers are a validation error (`badge`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); Badge(3) }
/// ```
public struct Badge: AlertNotificationComponent, Hashable {
    /// The badge number; 0 clears the badge.
    public let value: Int
    /// A badge of `value`.
    public init(_ value: Int) { self.value = value }
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.badge, value, name: "Badge") }
}
