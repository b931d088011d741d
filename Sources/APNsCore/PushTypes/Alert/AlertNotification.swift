/// A notification the user sees: an alert, a sound, a badge (`apns-push-type: alert`).
///
/// Build the `aps` dictionary with components; put your own data beside it with `appData`, any
/// `Encodable & Sendable` value that encodes as a keyed container:
///
/// ```swift
/// struct Game: Encodable, Sendable { var gameID: String }
/// let unread: Int? = nil  // with a count, the notification carries a badge
///
/// let notification = AlertNotification(bundleID: "com.example.poker", appData: Game(gameID: "12345678")) {
///     Alert {
///         Title("Game Request")
///         Subtitle("Five Card Draw")
///         Body("Bob wants to play poker")
///     }
///     Category("GAME_INVITATION")
///     if let count = unread { Badge(count) }
/// }
/// // {"aps":{"alert":{"title":"Game Request","subtitle":"Five Card Draw","body":"Bob wants to play poker"},"category":"GAME_INVITATION"},"gameID":"12345678"}
/// ```
///
/// Rules (<doc:ProtocolReference#Push-types>, `Alert+Rules.swift`): topic = bundle id; priority 10, 5 or 1
/// (default 10); 4096 bytes; token or certificate connectors; device targets.
public struct AlertNotification<AppData: Encodable & Sendable>: TokenDeliverable, CertificateDeliverable,
    BundleAddressed
{
    /// The priorities an alert may have.
    public enum Priority: Hashable, Sendable, CaseIterable {
        /// 10: deliver now (the default).
        case immediate
        /// 5: deliver when it saves power; may be grouped.
        case powerConsiderate
        /// 1: lowest; delivered when the device is awake anyway.
        case low

        /// The alert priority with this `apns-priority` value (every value is one).
        public init(_ priority: PushPriority) {
            switch priority {
            case .powerConsiderate: self = .powerConsiderate
            case .low: self = .low
            default: self = .immediate
            }
        }

        /// The `apns-priority` header value.
        public var pushPriority: PushPriority {
            switch self {
            case .immediate: return .immediate
            case .powerConsiderate: return .powerConsiderate
            case .low: return .low
            }
        }
    }

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .alert }

    public var bundleID: String
    /// The `apns-priority`, among the ones this push type allows (its nested `Priority`).
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?
    /// Written beside `aps`.
    public var appData: AppData
    /// How `appData` is encoded: `JSONEncoder`'s default strategies unless changed
    /// (``AppDataEncoding``).
    public var appDataEncoding: AppDataEncoding = .default
    /// The `aps` dictionary the components built.
    public var payload: AlertPayload

    /// The `apns-priority` header value.
    public var pushPriority: PushPriority { priority.pushPriority }

    /// An alert notification with app data beside `aps`.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id (`apns-topic`).
    ///   - appData: Your keys, written after `aps` in the order `encode(to:)` writes them.
    ///   - priority: `.immediate` (default), `.powerConsiderate` or `.low`.
    ///   - expiration: `nil` (Apple's storage policy), `.immediately`, or `try .at(date)`.
    ///   - collapseID: Replaces an earlier notification with the same id; at most 64 bytes.
    ///   - apnsID: The notification's id; APNs assigns one if `nil`.
    ///   - components: ``Alert``, ``Badge``, ``Sound``, ``ThreadID``, ``Category``,
    ///     ``ContentAvailable``, ``MutableContent``, ``TargetContentID``, ``InterruptionLevel``,
    ///     ``RelevanceScore``, ``FilterCriteria``.
    public init(
        bundleID: String,
        appData: AppData,
        priority: Priority = .immediate,
        expiration: Expiration? = nil,
        collapseID: CollapseID? = nil,
        apnsID: APNsID? = nil,
        @AlertNotificationBuilder _ components: () -> [any AlertNotificationComponent]
    ) {
        self.bundleID = bundleID
        self.appData = appData
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = AlertPayload(components())
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        try payload.validate()
        writer.beginObject()
        payload.write(to: &writer)
        try writer.appData(appData, encoding: appDataEncoding)
        writer.endObject()
    }
}

extension AlertNotification where AppData == NoAppData {
    /// An alert notification with nothing beside `aps`.
    ///
    /// ```swift
    /// let notification = AlertNotification(bundleID: "com.example.app") {
    ///     Alert { Title("Hello"); Body("World") }
    ///     Badge(3)
    /// }
    /// ```
    public init(
        bundleID: String,
        priority: Priority = .immediate,
        expiration: Expiration? = nil,
        collapseID: CollapseID? = nil,
        apnsID: APNsID? = nil,
        @AlertNotificationBuilder _ components: () -> [any AlertNotificationComponent]
    ) {
        self.init(
            bundleID: bundleID, appData: NoAppData(), priority: priority, expiration: expiration,
            collapseID: collapseID, apnsID: apnsID, components)
    }
}
