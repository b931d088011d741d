/// The `aps` dictionary of an alert notification, as the builder produced it: an ordinary value
/// that tests can compare. Serialised in the canonical key order of APNs reference §4.
public struct AlertPayload: Hashable, Sendable {
    /// The `alert` key: a plain string (shown as the body) or a dictionary.
    public enum AlertValue: Hashable, Sendable {
        case text(String)
        case content(AlertContent)
    }

    public var alert: AlertValue?
    public var badge: Int?
    public var sound: Sound?
    public var threadID: String?
    public var category: String?
    public var mutableContent = false
    public var targetContentID: String?
    public var interruptionLevel: InterruptionLevel?
    public var relevanceScore: Double?
    public var filterCriteria: String?
    /// Components given more than once; reported by validation as
    /// ``APNsValidationError/duplicateComponent(_:)``.
    var duplicates: [String] = []

    public init() {}

    /// Applies `components` in order.
    public init(_ components: [any AlertNotificationComponent]) {
        for component in components { component.apply(to: &self) }
    }

    /// Sets `keyPath` to `value`, noting a duplicate if it was already set.
    mutating func set<Value>(_ keyPath: WritableKeyPath<AlertPayload, Value?>, _ value: Value, name: String) {
        if self[keyPath: keyPath] != nil { duplicates.append(name) }
        self[keyPath: keyPath] = value
    }

    func validate() throws(APNsValidationError) {
        if let first = duplicates.first { throw .duplicateComponent(first) }
        if case .content(let content)? = alert { try content.validate() }
        if let badge, badge < 0 { throw .negativeBadge(badge) }
        if let sound { try sound.validate() }
        if let relevanceScore {
            guard relevanceScore.isFinite else { throw .nonFiniteNumber(path: "aps.relevance-score") }
            guard (0...1).contains(relevanceScore) else { throw .relevanceScoreOutOfRange(relevanceScore) }
        }
        if mutableContent {
            switch alert {
            case .text?: break
            case .content(let content)? where content.title != nil || content.subtitle != nil || content.body != nil: break
            default: throw .mutableContentWithoutAlertText
            }
        }
    }

    /// Writes `"aps":{…}` in the canonical order.
    func write(to writer: inout JSONWriter) {
        writer.literalKey("aps")
        writer.beginObject()
        switch alert {
        case .text(let text)?:
            writer.literalKey("alert")
            writer.string(text)
        case .content(let content)?:
            writer.literalKey("alert")
            content.write(to: &writer)
        case nil: break
        }
        if let badge { writer.literalKey("badge"); writer.int(badge) }
        if let sound { writer.literalKey("sound"); sound.write(to: &writer) }
        if let threadID { writer.literalKey("thread-id"); writer.string(threadID) }
        if let category { writer.literalKey("category"); writer.string(category) }
        if mutableContent { writer.literalKey("mutable-content"); writer.int(1) }
        if let targetContentID { writer.literalKey("target-content-id"); writer.string(targetContentID) }
        if let interruptionLevel { writer.literalKey("interruption-level"); writer.string(interruptionLevel.rawValue) }
        if let relevanceScore { writer.literalKey("relevance-score"); writer.double(relevanceScore) }
        if let filterCriteria { writer.literalKey("filter-criteria"); writer.string(filterCriteria) }
        writer.endObject()
    }
}

/// Builds the components of an ``AlertNotification``: ``Alert``, ``Badge``, ``Sound``,
/// ``ThreadID``, ``Category``, ``MutableContent``, ``TargetContentID``, ``InterruptionLevel``,
/// ``RelevanceScore`` and ``FilterCriteria``.
@resultBuilder
public enum AlertNotificationBuilder: ComponentBuilder {
    public typealias Component = any AlertNotificationComponent
}

/// A part of an alert notification's `aps` dictionary.
public protocol AlertNotificationComponent: Sendable {
    /// Sets this component's key on `payload`.
    func apply(to payload: inout AlertPayload)
}
