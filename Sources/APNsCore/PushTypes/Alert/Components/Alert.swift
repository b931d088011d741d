/// The alert the user sees: a plain string, or a title, subtitle, body and launch image.
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") {
///     Alert {
///         Title("Game Request")
///         Subtitle("Five Card Draw")
///         Body("Bob wants to play poker")
///     }
/// }
/// AlertNotification(bundleID: "com.example.app") { Alert("Bob wants to play poker") }
/// ```
public struct Alert: AlertNotificationComponent, Hashable {
    /// The `alert` value this component writes.
    public let value: AlertPayload.AlertValue

    /// A plain alert: `"alert":"text"`, shown as the body.
    public init(_ text: String) { value = .text(text) }

    /// An alert dictionary built from ``Title``, ``Subtitle``, ``Body`` and ``LaunchImage``.
    public init(@AlertBuilder _ content: () -> [any AlertComponent]) {
        value = .content(AlertContent(content()))
    }

    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.alert, value, name: "Alert") }
}
