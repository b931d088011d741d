/// An APNs push type (`apns-push-type`) and the facts Apple fixes for it.
///
/// Every fact about a push type — its header value, topic suffix, legal priorities, size limit and
/// accepted authentication — is defined once, in the `+Rules.swift` file of that type's folder
/// (`PushTypes/Alert/Alert+Rules.swift`, …). Client validation, the mock server and the docs all
/// read these values; nothing else spells them out. See <doc:ProtocolReference#Push-types>.
///
/// An open set: unknown values received from elsewhere are representable with ``init(rawValue:)``
/// returning `nil` for anything Apple does not define.
public struct PushType: Hashable, Sendable, CustomStringConvertible {
    /// The `apns-push-type` header value, for example `alert` or `widgets`.
    public let rawValue: String
    /// Appended to the bundle id to form `apns-topic` (`""` for alert, `.voip` for VoIP, …).
    /// `nil` for MDM, whose topic is the push certificate's UID rather than a bundle id.
    public let topicSuffix: String?
    /// The priorities Apple accepts for this push type.
    public let allowedPriorities: Set<PushPriority>
    /// The priority swift-apns sends when none is chosen.
    public let defaultPriority: PushPriority
    /// The expiration Apple requires, if it fixes one (push-to-talk: 0).
    public let requiredExpiration: Int?
    /// The largest payload, in bytes, Apple accepts for this push type on a device.
    public let maximumPayloadSize: Int
    /// How a connection that sends this push type may authenticate.
    public let authentication: Set<AuthenticationMethod>
    /// What every topic of this push type starts with, when Apple fixes it (MDM: `com.apple.mgmt.`).
    public let topicPrefix: String?
    /// The largest payload of a broadcast to a channel; `nil` when this push type cannot be
    /// broadcast (only `liveactivity` can, <doc:ProtocolReference#Broadcast-channels>).
    public let maximumBroadcastPayloadSize: Int?

    init(
        rawValue: String, topicSuffix: String?, topicPrefix: String? = nil, allowedPriorities: Set<PushPriority>,
        defaultPriority: PushPriority, requiredExpiration: Int? = nil, maximumPayloadSize: Int,
        maximumBroadcastPayloadSize: Int? = nil, authentication: Set<AuthenticationMethod>
    ) {
        self.topicPrefix = topicPrefix
        self.maximumBroadcastPayloadSize = maximumBroadcastPayloadSize
        self.rawValue = rawValue
        self.topicSuffix = topicSuffix
        self.allowedPriorities = allowedPriorities
        self.defaultPriority = defaultPriority
        self.requiredExpiration = requiredExpiration
        self.maximumPayloadSize = maximumPayloadSize
        self.authentication = authentication
    }

    /// The push type with this header value, or `nil` if Apple defines none.
    public init?(rawValue: String) {
        guard let known = PushType.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// The priority `value` names, if this push type allows it: for code that reads a priority as
    /// a number (from a command line, configuration or a request body) before it builds the typed
    /// notification, whose own `Priority` type then makes the choice exact.
    ///
    /// ```swift
    /// let priority = try PushType.widgets.priority(5)                  // .powerConsiderate
    /// let level = StandardPriority(priority) ?? .immediate             // for WidgetNotification
    /// try PushType.background.priority(10)   // throws: "… it is always 5."
    /// ```
    /// - Throws: ``APNsError/validation(_:)`` with
    ///   ``APNsValidationError/priorityNotAllowed(pushType:priority:)``, which names the
    ///   priorities this push type takes.
    public func priority(_ value: Int) throws(APNsError) -> PushPriority {
        do { return try validatedPriority(value) } catch { throw .validation(error) }
    }

    /// ``priority(_:)`` for code that throws validation errors only.
    package func validatedPriority(_ value: Int) throws(APNsValidationError) -> PushPriority {
        guard let priority = allowedPriorities.first(where: { $0.rawValue == value }) else {
            throw .priorityNotAllowed(pushType: self, priority: String(value))
        }
        return priority
    }

    /// All twelve push types Apple defines (<doc:ProtocolReference#Push-types>), in the order of
    /// their names.
    public static let allCases: [PushType] = Name.allCases.map(\.pushType)

    /// The `apns-topic` for a bundle id: the bundle id plus this type's suffix.
    public func topic(forBundleID bundleID: String) -> String {
        bundleID + (topicSuffix ?? "")
    }

    /// The bundle id inside `topic`, or `nil` when `topic` is not a topic of this push type: it
    /// must end with this type's suffix (start with its prefix, for MDM), and what is left must not
    /// itself end with this type's suffix or a `.push-type.` suffix (`com.example.app.voip` as a
    /// VoIP bundle id would become `….voip.voip`; `com.example.push-type.widgets` would become
    /// `….push-type.widgets.push-type.widgets`): a topic passed where the bundle id belongs
    /// (<doc:ProtocolReference#Push-types>). The client's checks and the mock server read this one
    /// rule.
    public func bundleID(fromTopic topic: String) -> String? {
        if let topicPrefix {
            guard topic.hasPrefix(topicPrefix), topic.utf8.count > topicPrefix.utf8.count else { return nil }
        }
        guard let suffix = topicSuffix else { return topic }
        guard topic.hasSuffix(suffix), topic.utf8.count > suffix.utf8.count else { return nil }
        let bundleID = String(topic.dropLast(suffix.count))
        if !suffix.isEmpty && bundleID.hasSuffix(suffix) { return nil }
        if PushType.allCases.contains(where: { other in
            guard let otherSuffix = other.topicSuffix, !otherSuffix.isEmpty else { return false }
            return bundleID.hasSuffix(otherSuffix) && otherSuffix.hasPrefix(".push-type.")
        }) {
            return nil
        }
        return bundleID
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { rawValue }

    public static func == (lhs: PushType, rhs: PushType) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

/// How a connection proves it may send: a JWT signed with a `.p8` key, or a TLS client certificate.
public enum AuthenticationMethod: String, Hashable, Sendable, CaseIterable {
    /// A JWT signed with a `.p8` key, in `authorization`.
    case token
    /// A TLS client certificate.
    case certificate
}
