/// The `aps` dictionary of an alert notification, as the builder produced it: an ordinary value
/// that tests can compare. Serialised in the canonical key order of <doc:ProtocolReference#The-aps-dictionary>.
public struct AlertPayload: Hashable, Sendable {
    /// The `alert` key: a plain string (shown as the body) or a dictionary.
    public enum AlertValue: Hashable, Sendable {
        /// A string alert, shown as the body.
        case text(String)
        /// An alert dictionary.
        case content(AlertContent)
    }

    /// The `alert` value: a string or a dictionary.
    public var alert: AlertValue?
    /// The `badge` number; 0 clears it.
    public var badge: Int?
    /// The `sound`.
    public var sound: Sound?
    /// The `thread-id` that groups notifications.
    public var threadID: String?
    /// The `category` of actions.
    public var category: String?
    /// Whether `content-available` is set, so the app is woken in the background as well.
    public var contentAvailable = false
    /// Whether `mutable-content` is set, so the service extension runs.
    public var mutableContent = false
    /// The `target-content-id` of the window to bring forward.
    public var targetContentID: String?
    /// The `interruption-level`.
    public var interruptionLevel: InterruptionLevel?
    /// The `relevance-score`, 0…1.
    public var relevanceScore: Double?
    /// The `filter-criteria` for Focus.
    public var filterCriteria: String?
    /// Components given more than once; reported by validation as
    /// ``APNsValidationError/duplicateComponent(_:)``.
    var duplicates: [String] = []

    /// An empty payload; the builder's components fill it.
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
            case .content(let content)? where content.title != nil || content.subtitle != nil || content.body != nil:
                break
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
        if contentAvailable { writer.literalKey("content-available"); writer.int(1) }
        if mutableContent { writer.literalKey("mutable-content"); writer.int(1) }
        if let targetContentID { writer.literalKey("target-content-id"); writer.string(targetContentID) }
        if let interruptionLevel { writer.literalKey("interruption-level"); writer.string(interruptionLevel.rawValue) }
        if let relevanceScore { writer.literalKey("relevance-score"); writer.double(relevanceScore) }
        if let filterCriteria { writer.literalKey("filter-criteria"); writer.string(filterCriteria) }
        writer.endObject()
    }
}

/// Builds the components of an ``AlertNotification``: ``Alert``, ``Badge``, ``Sound``,
/// ``ThreadID``, ``Category``, ``ContentAvailable``, ``MutableContent``, ``TargetContentID``,
/// ``InterruptionLevel``, ``RelevanceScore`` and ``FilterCriteria``.
@resultBuilder
public enum AlertNotificationBuilder: ComponentBuilder {
    /// What the builder collects.
    public typealias Component = any AlertNotificationComponent
}

/// A part of an alert notification's `aps` dictionary.
public protocol AlertNotificationComponent: Sendable {
    /// Sets this component's key on `payload`.
    func apply(to payload: inout AlertPayload)
}
