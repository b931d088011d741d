/// How relevant the notification is in the summary, from 0 to 1; other values are a validation error (`relevance-score`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); RelevanceScore(0.8) }
/// ```
public struct RelevanceScore: AlertNotificationComponent, Hashable {
    /// The score, 0…1.
    public let value: Double
    /// A relevance score from 0 (least) to 1 (most relevant).
    public init(_ value: Double) { self.value = value }
    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.relevanceScore, value, name: "RelevanceScore") }
}
