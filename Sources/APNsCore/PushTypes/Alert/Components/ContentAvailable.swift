/// Also wakes the app in the background to fetch what the alert is about
/// (`"content-available":1` beside the alert): the user sees the alert, and the app's
/// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` runs. A push that only
/// wakes the app, with nothing shown, is a ``BackgroundNotification``.
///
/// ```swift
/// AlertNotification(bundleID: "com.example.mail") {
///     Alert { Title("New mail"); Body("From Ana") }
///     ContentAvailable()
/// }
/// // {"aps":{"alert":{"title":"New mail","body":"From Ana"},"content-available":1}}
/// ```
public struct ContentAvailable: AlertNotificationComponent, Hashable {
    /// Sets `content-available`, so the app is woken as well.
    public init() {}
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) {
        if payload.contentAvailable { payload.duplicates.append("ContentAvailable") }
        payload.contentAvailable = true
    }
}
