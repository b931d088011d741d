/// Lets the app's notification service extension modify the alert (`"mutable-content":1`).
/// Needs an alert with a title, subtitle or body; validation rejects it otherwise.
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert { Body("Photo") }; MutableContent() }
/// ```
public struct MutableContent: AlertNotificationComponent, Hashable {
    /// Sets `mutable-content`, so the notification service extension runs.
    public init() {}
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) {
        if payload.mutableContent { payload.duplicates.append("MutableContent") }
        payload.mutableContent = true
    }
}
