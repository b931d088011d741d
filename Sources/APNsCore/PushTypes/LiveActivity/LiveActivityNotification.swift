#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Starts, updates or ends a Live Activity (`apns-push-type: liveactivity`).
///
/// Generic over your activity's `ContentState` and `Attributes` (encoded exactly as
/// `JSONEncoder`'s defaults would, because the device decodes them with `JSONDecoder`) and over the
/// event, which decides what the notification may carry:
///
/// ```swift
/// // Start: attributes and an alert are required; `attributes-type` is the attributes type's name.
/// let start = LiveActivityNotification(
///     bundleID: "com.example.game", start: GameState(health: 1),
///     attributes: GameAttributes(hero: "Power Panda"), alert: LiveActivityAlert(title: "Game on", body: "Go!"),
///     timestamp: .now, pushInput: .token)
/// // Update: no attributes, no dismissal date.
/// let update = LiveActivityNotification(bundleID: "com.example.game", update: GameState(health: 0.5), timestamp: .now)
/// // End: may set when the activity leaves the Lock Screen.
/// let end = LiveActivityNotification(bundleID: "com.example.game", end: GameState(health: 0), timestamp: .now,
///                                    dismissalDate: .now.addingTimeInterval(3600))
/// ```
///
/// Dates are sent as integer UNIX seconds. Keys follow the canonical order of <doc:ProtocolReference#The-aps-dictionary>.
/// Rules (`LiveActivity+Rules.swift`): topic = bundle id + `.push-type.liveactivity`; priority 10 or
/// 5 (default 10; 10 counts against a budget); 4096 bytes; token or certificate connectors.
public struct LiveActivityNotification<
    ContentState: Encodable & Sendable, Attributes: Encodable & Sendable, Event: LiveActivityEventKind
>: TokenDeliverable, CertificateDeliverable, BundleAddressed, StandardPrioritized {
    /// 10 (default) or 5.
    public typealias Priority = StandardPriority

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .liveactivity }

    public var bundleID: String
    /// The activity's `content-state`, encoded with ``contentEncoding``.
    public var contentState: ContentState
    /// When the content state was produced; the device ignores older pushes.
    public var timestamp: Date
    /// When the system marks the activity's content stale.
    public var staleDate: Date?
    /// Orders this activity among the app's others (any number).
    public var relevanceScore: Double?
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?
    /// How `contentState` and the start's attributes are encoded. Keep the default
    /// (`JSONEncoder`'s, which ActivityKit decodes with) unless the app's `ContentState` decodes
    /// something else by its own `init(from:)`.
    public var contentEncoding: AppDataEncoding = .default

    // Event-specific storage, exposed only by the extension of the event that has it.
    /// Always set on a start (its only init takes one and its `alert` cannot be set to nil).
    var storedAlert: LiveActivityAlert?
    var startAttributes: (type: String, value: Attributes)?
    var startPushInput: LiveActivityPushInput?
    var endDismissalDate: Date?

    init(
        bundleID: String, contentState: ContentState, timestamp: Date, alert: LiveActivityAlert?, staleDate: Date?,
        relevanceScore: Double?, priority: Priority, expiration: Expiration?, collapseID: CollapseID?, apnsID: APNsID?
    ) {
        self.bundleID = bundleID
        self.contentState = contentState
        self.timestamp = timestamp
        self.storedAlert = alert
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        writer.literalKey("aps")
        writer.beginObject()
        if let alert = storedAlert {
            writer.literalKey("alert")
            alert.write(to: &writer)
        }
        if let relevanceScore {
            guard relevanceScore.isFinite else { throw .nonFiniteNumber(path: "aps.relevance-score") }
            writer.literalKey("relevance-score")
            writer.double(relevanceScore)
        }
        if let staleDate { try writer.unixSeconds(key: "stale-date", staleDate) }
        try writer.encodedObject(key: "content-state", contentState, encoding: contentEncoding)
        try writer.unixSeconds(key: "timestamp", timestamp)
        writer.literalKey("event")
        writer.string(Event.name)
        if let endDismissalDate { try writer.unixSeconds(key: "dismissal-date", endDismissalDate) }
        if let startAttributes {
            writer.literalKey("attributes-type")
            writer.string(startAttributes.type)
            try writer.encodedObject(key: "attributes", startAttributes.value, encoding: contentEncoding)
        }
        switch startPushInput {
        case .token?:
            writer.literalKey("input-push-token")
            writer.int(1)
        case .channel(let channel)?:
            writer.literalKey("input-push-channel")
            writer.string(channel.id)
        case nil:
            break
        }
        writer.endObject()
        writer.endObject()
    }
}

extension LiveActivityNotification where Event == LiveActivityEvent.Start {
    /// Starts a Live Activity on a push-to-start token.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - contentState: The initial `content-state`.
    ///   - attributesType: The name of the app's `ActivityAttributes` type (`attributes-type`); by
    ///     default the name of `Attributes`, which is what ActivityKit expects when the server's
    ///     type has the app's name.
    ///   - attributes: The activity's static `attributes`.
    ///   - alert: Required on start (and `alert` cannot be set to nil afterwards).
    ///   - timestamp: When the content state was produced.
    ///   - pushInput: `.token` or `.channel(channel)` for how the activity receives updates; one, not both.
    ///   - staleDate: When the content becomes stale.
    ///   - relevanceScore: Orders this activity among the app's others.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil`, `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(
        bundleID: String, start contentState: ContentState,
        attributesType: String = String(describing: Attributes.self), attributes: Attributes,
        alert: LiveActivityAlert, timestamp: Date, pushInput: LiveActivityPushInput? = nil, staleDate: Date? = nil,
        relevanceScore: Double? = nil, priority: Priority = .immediate, expiration: Expiration? = nil,
        collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.init(
            bundleID: bundleID, contentState: contentState, timestamp: timestamp, alert: alert, staleDate: staleDate,
            relevanceScore: relevanceScore, priority: priority, expiration: expiration, collapseID: collapseID,
            apnsID: apnsID)
        startAttributes = (attributesType, attributes)
        startPushInput = pushInput
    }

    /// The alert every start carries; it can be replaced, not removed.
    public var alert: LiveActivityAlert {
        get { storedAlert ?? LiveActivityAlert(title: "", body: "") }  // never nil: see `storedAlert`
        set { storedAlert = newValue }
    }

    /// The `attributes-type` name.
    public var attributesType: String { startAttributes?.type ?? "" }
    /// How the started activity receives updates.
    public var pushInput: LiveActivityPushInput? {
        get { startPushInput }
        set { startPushInput = newValue }
    }
}

extension LiveActivityNotification where Event == LiveActivityEvent.Update, Attributes == NoAttributes {
    /// Updates a running Live Activity.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - contentState: The new `content-state`.
    ///   - timestamp: When the content state was produced.
    ///   - alert: Lights up the device and shows the expanded presentation.
    ///   - staleDate: When the content becomes stale.
    ///   - relevanceScore: Orders this activity among the app's others.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil`, `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(
        bundleID: String, update contentState: ContentState, timestamp: Date, alert: LiveActivityAlert? = nil,
        staleDate: Date? = nil, relevanceScore: Double? = nil, priority: Priority = .immediate,
        expiration: Expiration? = nil, collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.init(
            bundleID: bundleID, contentState: contentState, timestamp: timestamp, alert: alert, staleDate: staleDate,
            relevanceScore: relevanceScore, priority: priority, expiration: expiration, collapseID: collapseID,
            apnsID: apnsID)
    }

    /// Lights up the device and shows the expanded presentation; nil for a silent update.
    public var alert: LiveActivityAlert? {
        get { storedAlert }
        set { storedAlert = newValue }
    }
}

extension LiveActivityNotification where Event == LiveActivityEvent.End, Attributes == NoAttributes {
    /// Ends a Live Activity with its final content state.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - contentState: The final `content-state`.
    ///   - timestamp: When the content state was produced.
    ///   - dismissalDate: When the ended activity leaves the Lock Screen (`dismissal-date`).
    ///   - alert: Shown with the final state.
    ///   - staleDate: When the content becomes stale.
    ///   - relevanceScore: Orders this activity among the app's others.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil`, `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(
        bundleID: String, end contentState: ContentState, timestamp: Date, dismissalDate: Date? = nil,
        alert: LiveActivityAlert? = nil, staleDate: Date? = nil, relevanceScore: Double? = nil,
        priority: Priority = .immediate, expiration: Expiration? = nil, collapseID: CollapseID? = nil,
        apnsID: APNsID? = nil
    ) {
        self.init(
            bundleID: bundleID, contentState: contentState, timestamp: timestamp, alert: alert, staleDate: staleDate,
            relevanceScore: relevanceScore, priority: priority, expiration: expiration, collapseID: collapseID,
            apnsID: apnsID)
        endDismissalDate = dismissalDate
    }

    /// Shown with the final state; nil for none.
    public var alert: LiveActivityAlert? {
        get { storedAlert }
        set { storedAlert = newValue }
    }

    /// When the ended activity leaves the Lock Screen.
    public var dismissalDate: Date? {
        get { endDismissalDate }
        set { endDismissalDate = newValue }
    }
}
