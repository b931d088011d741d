/// How relevant the notification is in the summary, from 0 to 1; other values are a validation error (`relevance-score`).
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("…"); RelevanceScore(0.8) }
/// ```
public struct RelevanceScore: AlertNotificationComponent, Hashable {
    public let value: Double
    public init(_ value: Double) { self.value = value }
    public func apply(to payload: inout AlertPayload) { payload.set(\.relevanceScore, value, name: "RelevanceScore") }
}
