#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A notification described by plain values, as a front end reads it from its input — the `apns`
/// command from its flags, the push gateway from a JSON body — and the one place that turns such a
/// description into the push type's typed notification, so that both front ends follow the same
/// rules and a push type added to the library reaches both.
///
/// The front end reads its input into the fields (checking only what its format alone can get
/// wrong: a string where a number belongs), then calls ``notification(now:payload:)``. Every rule
/// is checked there or by the typed notification it builds; a broken rule is a ``Problem`` naming
/// the field, which the front end words with its own names for fields.
///
/// Thread safety: a value type; `Sendable`.
@_spi(Description)
public struct NotificationDescription: Sendable {
    /// The `apns-push-type` as given: checked against the push types Apple defines.
    public var pushType: String
    /// The app's bundle id (``NotificationField/bundleID``), or for `mdm` the MDM topic
    /// (``NotificationField/topic``).
    public var app: String?
    public var priority: Int?
    /// UNIX seconds; 0 asks APNs to try once and not store the notification.
    public var expiration: Int?
    public var collapseID: String?
    public var apnsID: String?

    public var alert: AlertText?
    public var badge: Int?
    public var sound: Sound?
    public var threadID: String?
    public var category: String?
    public var interruptionLevel: String?
    public var relevanceScore: Double?
    public var contentAvailable: Bool?
    public var mutableContent: Bool?
    public var targetContentID: String?
    public var filterCriteria: String?
    public var appData: RawJSONObject?

    public var containerIdentifier: String?
    public var domain: String?

    public var encryptedData: String?
    public var sessionIdentifier: String?
    public var keyID: String?
    public var messageIndex: Int?

    public var pushMagic: String?

    /// `start`, `update` or `end`.
    public var event: String?
    public var contentState: RawJSONObject?
    /// UNIX seconds of the content state; `now` when not given.
    public var timestamp: Int?
    public var dismissalDate: Int?
    public var staleDate: Int?
    public var attributesType: String?
    public var attributes: RawJSONObject?
    public var inputPushToken: Bool?
    public var inputPushChannel: String?

    /// An alert's text: each part plain or localized.
    public struct AlertText: Sendable, Hashable {
        public var title: LocalizableText?
        public var subtitle: LocalizableText?
        public var body: LocalizableText?
        public var launchImage: String?

        public init(
            title: LocalizableText? = nil, subtitle: LocalizableText? = nil, body: LocalizableText? = nil,
            launchImage: String? = nil
        ) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.launchImage = launchImage
        }
    }

    /// Where the payload comes from.
    public enum Payload: Sendable {
        /// Built from the fields: every field the push type's payload needs must be given.
        case built
        /// Given whole by the caller, who replaces the built body (`apns send --payload`): the
        /// payload's fields may be left out; the headers are still built and checked.
        case replaced
    }

    /// A description of a notification of `pushType` (the `apns-push-type` value) with no other
    /// field given.
    public init(pushType: String) { self.pushType = pushType }

    /// The fields given: those that are not `nil`.
    public var givenFields: [NotificationField] {
        let values: [(NotificationField, Any?)] = [
            (.priority, priority), (.expiration, expiration), (.collapseID, collapseID), (.apnsID, apnsID),
            (.alert, alert), (.badge, badge), (.sound, sound), (.threadID, threadID), (.category, category),
            (.interruptionLevel, interruptionLevel), (.relevanceScore, relevanceScore),
            (.contentAvailable, contentAvailable), (.mutableContent, mutableContent),
            (.targetContentID, targetContentID), (.filterCriteria, filterCriteria), (.appData, appData),
            (.containerIdentifier, containerIdentifier), (.domain, domain), (.encryptedData, encryptedData),
            (.sessionIdentifier, sessionIdentifier), (.keyID, keyID), (.messageIndex, messageIndex),
            (.pushMagic, pushMagic), (.event, event), (.contentState, contentState), (.timestamp, timestamp),
            (.dismissalDate, dismissalDate), (.staleDate, staleDate), (.attributesType, attributesType),
            (.attributes, attributes), (.inputPushToken, inputPushToken), (.inputPushChannel, inputPushChannel),
        ]
        return values.compactMap { field, value in value == nil ? nil : field }
    }

    /// The push type this description names.
    ///
    /// - Throws: ``Problem`` on ``NotificationField/pushType`` when Apple defines no such type.
    public func checkedPushType() throws(Problem) -> PushType.Name {
        guard let name = PushType.Name(rawValue: pushType) else {
            throw Problem(
                .pushType,
                "\(pushType) is not an APNs push type; use one of \(PushType.Name.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        return name
    }

    /// The typed notification this description describes, every rule a description can break
    /// checked (the rules that need the encoded payload are checked when its request is built).
    ///
    /// - Parameters:
    ///   - now: A Live Activity's `timestamp` when none is given.
    ///   - payload: Whether the payload is built from the fields (the default) or replaced by the
    ///     caller.
    /// - Throws: ``Problem`` naming the field at fault.
    public func notification(now: Date, payload: Payload = .built) throws(Problem) -> any PushNotification {
        let name = try checkedPushType()
        let allowed = NotificationField.fields(of: name)
        for field in givenFields.sorted() where !allowed.contains(field) {
            throw Problem(
                field,
                "does not apply to \(pushType) (it belongs to \(field.pushTypes.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        let appField: NotificationField = name == .mdm ? .topic : .bundleID
        guard let app, !app.isEmpty else {
            throw Problem(
                appField, "is missing; give the app's \(name == .mdm ? "MDM topic" : "bundle id, e.g. com.example.app")"
            )
        }
        let type = name.pushType
        let headers = try Headers(self, type: type)
        let filled = payload == .replaced ? placeholders(for: name) : self
        switch name {
        case .alert:
            return try filled.alertNotification(app: app, headers)
        case .background:
            return BackgroundNotification(
                bundleID: app, appData: filled.checkedAppData(), expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .voip:
            return VoIPNotification(
                bundleID: app, appData: filled.checkedAppData(), priority: headers.standard,
                expiration: headers.expiration, collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .complication:
            return ComplicationNotification(
                bundleID: app, appData: filled.checkedAppData(), priority: headers.standard,
                expiration: headers.expiration, collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .pushtotalk:
            if let expiration, let required = type.requiredExpiration, expiration != required {
                throw Problem(
                    .expiration, sentence: "pushtotalk notifications always expire at once (\(required)); leave it out")
            }
            return PushToTalkNotification(
                bundleID: app, appData: filled.checkedAppData(), collapseID: headers.collapseID,
                apnsID: headers.apnsID)
        case .widgets:
            return WidgetNotification(
                bundleID: app, priority: headers.standard, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .controls:
            return ControlsNotification(
                bundleID: app, priority: headers.standard, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .location:
            return LocationNotification(
                bundleID: app, priority: headers.standard, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .fileprovider:
            guard let container = filled.containerIdentifier, let domain = filled.domain else {
                throw Problem(
                    filled.containerIdentifier == nil ? .containerIdentifier : .domain,
                    sentence: "fileprovider needs \(.containerIdentifier) and \(.domain)")
            }
            return FileProviderNotification(
                bundleID: app, containerIdentifier: container, domain: domain, priority: headers.standard,
                expiration: headers.expiration, collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .mdm:
            guard let magic = filled.pushMagic else {
                throw Problem(.pushMagic, sentence: "mdm needs the device's \(.pushMagic) string")
            }
            return MDMNotification(
                topic: app, pushMagic: magic, priority: headers.standard, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .accessory:
            guard let encryptedData = filled.encryptedData, let sessionIdentifier = filled.sessionIdentifier,
                let keyID = filled.keyID
            else {
                throw Problem(
                    filled.encryptedData == nil
                        ? .encryptedData : filled.sessionIdentifier == nil ? .sessionIdentifier : .keyID,
                    sentence:
                        "accessory needs \(.encryptedData), \(.sessionIdentifier), \(.keyID) and \(.messageIndex), as the accessory sent them"
                )
            }
            guard let index = filled.messageIndex else {
                throw Problem(.messageIndex, sentence: "accessory needs the ratchet's \(.messageIndex)")
            }
            guard let messageIndex = UInt64(exactly: index) else {
                throw Problem(.messageIndex, "is negative; give 0 or more")
            }
            return AccessoryNotification(
                bundleID: app, encryptedData: encryptedData, sessionIdentifier: sessionIdentifier, keyID: keyID,
                messageIndex: messageIndex, priority: headers.standard, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case .liveactivity:
            return try filled.liveActivity(app: app, headers, now: now)
        }
    }

    /// With `payload: .replaced`, the payload's required fields, where not given, filled with
    /// values that pass the push type's checks; the caller's body replaces what they build.
    private func placeholders(for name: PushType.Name) -> NotificationDescription {
        var filled = self
        switch name {
        case .fileprovider:
            filled.containerIdentifier = containerIdentifier ?? ""
            filled.domain = domain ?? ""
        case .mdm: filled.pushMagic = pushMagic ?? ""
        case .accessory:
            filled.encryptedData = encryptedData ?? "AA=="
            filled.sessionIdentifier = sessionIdentifier ?? "-"
            filled.keyID = keyID ?? "AA=="
            filled.messageIndex = messageIndex ?? 0
        case .liveactivity:
            filled.event = event ?? LiveActivityEvent.Update.name
            if filled.contentState == nil { filled.contentState = .empty }
        case .alert, .background, .voip, .complication, .pushtotalk, .widgets, .controls, .location: break
        }
        return filled
    }

    /// The headers' fields, checked.
    private struct Headers {
        var priority: PushPriority?
        var expiration: Expiration?
        var collapseID: CollapseID?
        var apnsID: APNsID?
        var standard: StandardPriority { priority.flatMap(StandardPriority.init) ?? .immediate }

        init(_ description: NotificationDescription, type: PushType) throws(Problem) {
            do throws(APNsValidationError) {
                priority = try description.priority.map { value throws(APNsValidationError) in
                    try type.validatedPriority(value)
                }
            } catch {
                throw Problem(.priority, sentence: "\(error.description)")
            }
            do throws(APNsValidationError) {
                expiration = try description.expiration.map { value throws(APNsValidationError) in
                    try Expiration(validatingUnixSeconds: value)
                }
            } catch {
                throw Problem(.expiration, sentence: "\(error.description)")
            }
            collapseID = description.collapseID.map { CollapseID($0) }
            if let text = description.apnsID {
                guard let id = APNsID(text) else {
                    throw Problem(
                        .apnsID, "\(text) is not a UUID; give one like 123e4567-e89b-12d3-a456-4266554400a0")
                }
                apnsID = id
            }
        }
    }

    private func checkedAppData() -> RawJSONObject { appData ?? .empty }

    private func alertNotification(app: String, _ headers: Headers) throws(Problem) -> any PushNotification {
        let level = headers.priority.map(AlertNotification<RawJSONObject>.Priority.init) ?? .immediate
        let interruption = try checkedInterruptionLevel()
        let alert = alert
        let badge = badge
        let sound = sound
        let threadID = threadID
        let category = category
        let relevanceScore = relevanceScore
        let contentAvailable = contentAvailable ?? false
        let mutableContent = mutableContent ?? false
        let targetContentID = targetContentID
        let filterCriteria = filterCriteria
        return AlertNotification(
            bundleID: app, appData: checkedAppData(), priority: level, expiration: headers.expiration,
            collapseID: headers.collapseID, apnsID: headers.apnsID
        ) {
            if let alert {
                Alert {
                    if let title = alert.title { title.title }
                    if let subtitle = alert.subtitle { subtitle.subtitle }
                    if let body = alert.body { body.body }
                    if let image = alert.launchImage { LaunchImage(image) }
                }
            }
            if let badge { Badge(badge) }
            if let sound { sound }
            if let threadID { ThreadID(threadID) }
            if let category { Category(category) }
            if let interruption { interruption }
            if let relevanceScore { RelevanceScore(relevanceScore) }
            if contentAvailable { ContentAvailable() }
            if mutableContent { MutableContent() }
            if let targetContentID { TargetContentID(targetContentID) }
            if let filterCriteria { FilterCriteria(filterCriteria) }
        }
    }

    private func checkedInterruptionLevel() throws(Problem) -> InterruptionLevel? {
        guard let interruptionLevel else { return nil }
        let levels: [InterruptionLevel] = [.passive, .active, .timeSensitive, .critical]
        guard let level = levels.first(where: { $0.rawValue == interruptionLevel }) else {
            throw Problem(
                .interruptionLevel,
                "\(interruptionLevel) is not one of \(levels.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }

    private func liveActivity(app: String, _ headers: Headers, now: Date) throws(Problem) -> any PushNotification {
        guard let state = contentState else {
            throw Problem(
                .contentState,
                sentence: "liveactivity needs \(.contentState), the activity's ContentState as a JSON object")
        }
        func date(_ seconds: Int) -> Date { Date(timeIntervalSince1970: TimeInterval(seconds)) }
        let time = timestamp.map(date) ?? now
        let stale = staleDate.map(date)
        var liveAlert: LiveActivityAlert?
        if let alert {
            if alert.subtitle != nil || alert.launchImage != nil {
                throw Problem(
                    .alert, part: alert.subtitle != nil ? .subtitle : .launchImage,
                    sentence: "a Live Activity alert has a title and a body only")
            }
            if let sound, sound.criticalVolume != nil {
                throw Problem(.sound, "is critical; a Live Activity's alert plays a sound by its name only")
            }
            liveAlert = LiveActivityAlert(
                title: alert.title ?? .text(""), body: alert.body ?? .text(""), sound: sound?.name)
        } else if sound != nil {
            throw Problem(.sound, sentence: "a Live Activity plays a sound with its alert: give \(.alert) too")
        }
        let startOnly: [NotificationField] = givenFields.filter {
            [.attributesType, .attributes, .inputPushToken, .inputPushChannel].contains($0)
        }
        if event != LiveActivityEvent.Start.name, let first = startOnly.first {
            throw Problem(first, "belongs to the start event")
        }
        if event != LiveActivityEvent.End.name, dismissalDate != nil {
            throw Problem(.dismissalDate, "belongs to the end event")
        }
        switch event {
        case LiveActivityEvent.Update.name?:
            return LiveActivityNotification(
                bundleID: app, update: state, timestamp: time, alert: liveAlert, staleDate: stale,
                relevanceScore: relevanceScore, priority: headers.standard, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID)
        case LiveActivityEvent.End.name?:
            return LiveActivityNotification(
                bundleID: app, end: state, timestamp: time, dismissalDate: dismissalDate.map(date), alert: liveAlert,
                staleDate: stale, relevanceScore: relevanceScore, priority: headers.standard,
                expiration: headers.expiration, collapseID: headers.collapseID, apnsID: headers.apnsID)
        case LiveActivityEvent.Start.name?:
            guard let attributesType, let attributes else {
                throw Problem(
                    attributesType == nil ? .attributesType : .attributes,
                    sentence: "a Live Activity start needs \(.attributesType) and \(.attributes)")
            }
            guard let liveAlert else {
                throw Problem(.alert, sentence: "a Live Activity start needs an alert with a title and a body")
            }
            let input: LiveActivityPushInput?
            switch (inputPushToken ?? false, inputPushChannel) {
            case (true, nil): input = .token
            case (false, let id?):
                do {
                    input = .channel(try BroadcastChannel(validatingID: id, bundleID: app))
                } catch {
                    throw Problem(.inputPushChannel, sentence: "\(error.description)")
                }
            case (false, nil): input = nil
            case (true, _?):
                throw Problem(.inputPushChannel, sentence: "give \(.inputPushToken) or \(.inputPushChannel), not both")
            }
            return LiveActivityNotification(
                bundleID: app, start: state, attributesType: attributesType, attributes: attributes, alert: liveAlert,
                timestamp: time, pushInput: input, staleDate: stale, relevanceScore: relevanceScore,
                priority: headers.standard, expiration: headers.expiration, collapseID: headers.collapseID,
                apnsID: headers.apnsID)
        default:
            throw Problem(.event, sentence: "liveactivity needs \(.event): start, update or end")
        }
    }
}

extension LocalizableText {
    /// The alert's title, subtitle or body from this text.
    fileprivate var title: Title {
        switch self {
        case .text(let text): Title(text)
        case .localized(let key, let arguments): Title(localizedKey: key, arguments: arguments)
        }
    }
    fileprivate var subtitle: Subtitle {
        switch self {
        case .text(let text): Subtitle(text)
        case .localized(let key, let arguments): Subtitle(localizedKey: key, arguments: arguments)
        }
    }
    fileprivate var body: Body {
        switch self {
        case .text(let text): Body(text)
        case .localized(let key, let arguments): Body(localizedKey: key, arguments: arguments)
        }
    }
}
