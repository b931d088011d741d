import APNs
import Foundation

/// A `POST /v1/notifications` body, read into the library's typed notification for its push type,
/// so that what the gateway queues has passed the same rules as a Swift caller's notification.
///
/// The fields (the wire format's names where APNs has one; `openapi.yaml` describes them):
///
/// ```json
/// {"push-type": "alert", "bundle-id": "com.example.app", "priority": 10,
///  "alert": {"title": "Hello", "body": "World"}, "badge": 1, "data": {"gameID": 7},
///  "devices": ["00fc13adff78…"]}
/// ```
///
/// Thread safety: a value type; `Sendable`.
public struct NotificationRequest: Sendable {
    /// The push type.
    public let pushType: PushType
    /// The app the notification is for: its bundle id (for `mdm`, the MDM topic). API keys are
    /// allowed by this name.
    public let app: String
    /// The devices, each token checked; empty when the notification goes to a ``channel``.
    public let devices: [Device]
    /// The typed notification, every rule checked.
    public let notification: any PushNotification
    /// The body without `devices`, compact with sorted keys: what the queue stores and the sender
    /// reads back (``NotificationRequest/init(storedJSON:)``). A Live Activity's `timestamp`, when
    /// absent, is fixed here at acceptance so that every device gets the same one.
    public let storedJSON: String

    /// Reads and checks a request body; `maximumDevices` bounds `devices`.
    ///
    /// - Throws: ``RequestProblem`` naming the field and the rule, with nothing queued.
    public init(body: [UInt8], maximumDevices: Int, now: Date = Date()) throws(RequestProblem) {
        var fields = try NotificationRequest.object(body)
        let devicesValue = fields.removeValue(forKey: "devices")
        let channelValue = fields.removeValue(forKey: "channel")
        var devices: [Device] = []
        var tokensGiven = 0
        var channelID: String?
        switch (devicesValue, channelValue) {
        case (nil, nil):
            throw RequestProblem(
                field: "devices",
                "give the device tokens to send to: \"devices\": [\"<hex token>\", …], or a broadcast channel: \"channel\": \"<channel id>\""
            )
        case (_?, _?):
            throw RequestProblem(field: "channel", "give \"devices\" or \"channel\", not both")
        case (nil, let value?):
            guard case .string(let id) = value else {
                throw RequestProblem(field: "channel", "is \(value.typeName); give the channel id APNs returned")
            }
            channelID = id
        case (let value?, nil):
            (devices, tokensGiven) = try NotificationRequest.devices(value, maximumDevices: maximumDevices)
        }
        if fields["push-type"] == .string("liveactivity"), fields["timestamp"] == nil {
            fields["timestamp"] = .integer(Int64(now.timeIntervalSince1970))
        }
        let spec = try NotificationSpec(fields)
        if spec.apnsID != nil, channelID != nil {
            throw RequestProblem(
                field: "apns-id", "a broadcast's apns-id is APNs' own; give apns-id with one device, or leave it out")
        }
        if spec.apnsID != nil, tokensGiven > 1 {
            throw RequestProblem(
                field: "apns-id",
                "one apns-id names one push, and this request gives \(tokensGiven) tokens: send one device per request with its own apns-id, or leave it out (the gateway gives each device-send its own, the same on every attempt)"
            )
        }
        self.pushType = spec.pushType
        self.app = spec.app
        self.devices = devices
        self.notification = spec.notification
        self.storedJSON = JSONValue.object(fields).compactText
        if let channelID {
            guard spec.notification is any BroadcastDeliverable else {
                throw RequestProblem(
                    field: "channel",
                    "a broadcast channel takes a liveactivity update or end; send \(spec.pushType.rawValue) to \"devices\""
                )
            }
            do {
                channel = try BroadcastChannel(id: channelID, bundleID: spec.app)
            } catch {
                throw RequestProblem(field: "channel", error.description)
            }
        } else {
            channel = nil
        }
    }

    /// The broadcast channel, when the notification goes to one instead of devices.
    public let channel: BroadcastChannel?

    /// What the queue stores per target: each device's token, or `channel:` and the channel id.
    public var targets: [String] {
        if let channel { return [NotificationRequest.channelPrefix + channel.id] }
        return devices.map(\.token)
    }

    /// The prefix of a channel target in the queue.
    static let channelPrefix = "channel:"

    /// `devices`, every token checked, at most `maximumDevices` given; with how many were given.
    /// A token given twice (in any case: it is hex) is one device and is sent once — a second push
    /// would be a second alert on the same phone, and the answer's `devices` counts what was queued.
    private static func devices(
        _ value: JSONValue, maximumDevices: Int
    ) throws(RequestProblem) -> (devices: [Device], given: Int) {
        guard case .array(let tokens) = value, !tokens.isEmpty else {
            throw RequestProblem(
                field: "devices",
                "is \(value.typeName == "an array" ? "empty" : value.typeName); give an array of 1 to \(maximumDevices) hex device tokens"
            )
        }
        guard tokens.count <= maximumDevices else {
            throw RequestProblem(
                field: "devices", "has \(tokens.count) tokens; at most \(maximumDevices) go in one request: split it")
        }
        var devices: [Device] = []
        devices.reserveCapacity(tokens.count)
        var seen = Set<String>()
        for (index, token) in tokens.enumerated() {
            guard case .string(let text) = token else {
                throw RequestProblem(field: "devices[\(index)]", "is \(token.typeName); a device token is a hex string")
            }
            let device: Device
            do { device = try Device(token: text) } catch {
                throw RequestProblem(field: "devices[\(index)]", error.description)
            }
            if seen.insert(device.token).inserted { devices.append(device) }
        }
        return (devices, tokens.count)
    }

    /// Checks the rules that need a request (payload size, what the push type allows) and that
    /// the gateway's connector, authenticating with `method`, may send this push type.
    public func check(for method: AuthenticationMethod) throws(RequestProblem) {
        do {
            if let channel, let broadcast = notification as? any BroadcastDeliverable {
                try broadcast.request(to: channel).checkRules(for: method)
            } else if let device = devices.first {
                try notification.request(to: device).checkRules(for: method)
            }
        } catch {
            // What JSON Schema cannot say gets its own status, so that a body valid under
            // openapi.yaml is never a 400: the encoded payload's size (413) and the gateway's own
            // credential (403: an mdm push needs a certificate, a widget push a token).
            let kind: RequestProblem.Kind
            switch error {
            case .payloadTooLarge: kind = .tooLarge
            case .authenticationNotAllowed: kind = .notForThisGateway
            default: kind = .invalid
            }
            var field = channel != nil ? "channel" : nil
            if case .invalidAccessoryField(let name) = error { field = AccessoryFields.field(forPayloadKey: name) }
            throw RequestProblem(field: field, error.description, kind: kind)
        }
    }

    /// The notification stored by ``storedJSON``, read and checked again before it is sent.
    static func notification(storedJSON: String) throws(RequestProblem) -> NotificationSpec {
        try NotificationSpec(object(Array(storedJSON.utf8)))
    }

    /// The body as a JSON object, or a problem that says what it is instead.
    static func object(_ body: [UInt8]) throws(RequestProblem) -> [String: JSONValue] {
        do {
            return try JSONDecoder().decode([String: JSONValue].self, from: Data(body))
        } catch {
            if let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) {
                throw RequestProblem("the body is \(value.typeName); give a JSON object")
            }
            throw RequestProblem("the body is not valid JSON: \(describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .dataCorrupted(let context)?: return context.underlyingError.map { "\($0)" } ?? context.debugDescription
        case .typeMismatch(_, let context)?: return context.debugDescription
        default: return "\(error)"
        }
    }
}

/// What is wrong with a request, naming the field and the rule: the `detail` of a problem+json
/// answer (400, or 413 and 403 for the two rules ``Kind`` names).
public struct RequestProblem: Error, CustomStringConvertible, Sendable, Equatable {
    /// Which answer a problem gets.
    public enum Kind: Sendable, Equatable {
        /// The body breaks a rule `openapi.yaml` states: 400.
        case invalid
        /// The notification's APNs payload is over its push type's limit, which a schema cannot
        /// state (it counts encoded bytes): 413.
        case tooLarge
        /// A valid notification that the gateway's APNs credential cannot send (mdm needs a
        /// certificate; widgets, controls, location and fileprovider a token): 403.
        case notForThisGateway
    }

    /// The field at fault (`devices[3]`, `alert.title`), when one is.
    public let field: String?
    /// What is wrong and how to fix it.
    public let message: String
    /// Which answer it gets.
    public let kind: Kind

    init(field: String? = nil, _ message: String, kind: Kind = .invalid) {
        self.field = field
        self.message = message
        self.kind = kind
    }

    public var description: String { field.map { "\($0): \(message)" } ?? message }
}

/// What a gateway crash may cost a notification's device-sends. APNs has no idempotency: a push sent
/// twice buzzes twice.
enum DeliverySemantics: String, Sendable {
    /// After a crash, device-sends that may have been sent are sent again (the default): none is
    /// lost, a few may arrive twice.
    case atLeastOnce = "at-least-once"
    /// Before a device-send may be written to APNs its start is recorded; after a crash, one
    /// recorded as started is reported `failed` with `delivery: unknown` instead of being sent
    /// again: none arrives twice, a few may be lost.
    case atMostOnce = "at-most-once"
}

/// The notification fields of a request (everything but `devices`), built into the push type's
/// typed notification.
struct NotificationSpec: Sendable {
    let pushType: PushType
    let app: String
    let notification: any PushNotification
    /// The client's `apns-id`, when it gave one (one device or a channel only).
    let apnsID: APNsID?
    /// What a crash may cost: a repeat (`at-least-once`, the default) or a loss (`at-most-once`).
    let delivery: DeliverySemantics

    /// The fields every push type takes.
    static let common: Set<String> = [
        "push-type", "bundle-id", "topic", "priority", "expiration", "collapse-id", "apns-id", "delivery",
    ]
    /// The fields each push type adds.
    static let specific: [String: Set<String>] = [
        "alert": [
            "alert", "badge", "sound", "thread-id", "category", "interruption-level", "relevance-score",
            "content-available", "mutable-content",
            "target-content-id", "filter-criteria", "data",
        ],
        "background": ["data"],
        "voip": ["data"],
        "complication": ["data"],
        "pushtotalk": ["data"],
        "widgets": [],
        "controls": [],
        "location": [],
        "fileprovider": ["container-identifier", "domain"],
        "accessory": ["encrypted-data", "session-identifier", "key-id", "message-index"],
        "mdm": ["push-magic"],
        "liveactivity": [
            "event", "content-state", "timestamp", "dismissal-date", "stale-date", "relevance-score", "alert", "sound",
            "attributes-type", "attributes", "input-push-token", "input-push-channel",
        ],
    ]

    init(_ fields: [String: JSONValue]) throws(RequestProblem) {
        let reader = FieldReader(fields: fields)
        guard let typeName = try reader.string("push-type") else {
            throw RequestProblem(
                field: "push-type",
                "is missing; give one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let type = PushType(rawValue: typeName), let allowed = NotificationSpec.specific[typeName] else {
            throw RequestProblem(
                field: "push-type",
                "\(typeName) is not an APNs push type; use one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        for key in fields.keys.sorted() where !NotificationSpec.common.contains(key) && !allowed.contains(key) {
            let belongsTo = NotificationSpec.specific.filter { $0.value.contains(key) }.keys.sorted()
            throw RequestProblem(
                field: key,
                belongsTo.isEmpty
                    ? "is not a field of a notification request; see openapi.yaml"
                    : "does not apply to \(typeName) (it belongs to \(belongsTo.joined(separator: ", ")))")
        }
        let appKey = type == .mdm ? "topic" : "bundle-id"
        let otherKey = type == .mdm ? "bundle-id" : "topic"
        if fields[otherKey] != nil {
            throw RequestProblem(
                field: otherKey,
                type == .mdm
                    ? "mdm is addressed by \"topic\" (the MDM push certificate's topic), not a bundle id"
                    : "give the app as \"bundle-id\"; the topic follows from it and the push type")
        }
        guard let app = try reader.string(appKey), !app.isEmpty else {
            throw RequestProblem(
                field: appKey,
                "is missing; give the app's \(type == .mdm ? "MDM topic" : "bundle id, e.g. com.example.app")")
        }
        self.pushType = type
        self.app = app
        if let text = try reader.string("apns-id") {
            guard let id = APNsID(text) else {
                throw RequestProblem(
                    field: "apns-id", "\(text) is not a UUID; give one like 123e4567-e89b-12d3-a456-4266554400a0")
            }
            apnsID = id
        } else {
            apnsID = nil
        }
        if let text = try reader.string("delivery") {
            guard let semantics = DeliverySemantics(rawValue: text) else {
                throw RequestProblem(
                    field: "delivery",
                    "\(text) is not a delivery semantics; give at-least-once (the default: after a crash, what may have been sent is sent again) or at-most-once (it is reported failed with delivery unknown instead)"
                )
            }
            delivery = semantics
        } else {
            delivery = .atLeastOnce
        }
        self.notification = try NotificationSpec.build(type, app: app, reader)
    }

    private static func build(
        _ type: PushType, app: String, _ reader: FieldReader
    ) throws(RequestProblem) -> any PushNotification {
        var expiration: Expiration?
        if let seconds = try reader.integer("expiration") {
            do throws(APNsValidationError) {
                expiration = try Expiration(unixSeconds: seconds)
            } catch {
                throw RequestProblem(field: "expiration", error.description)
            }
        }
        let collapse = try reader.collapseID()
        // Checked by the push type (the library's message); the typed priority is then exact.
        let priority: PushPriority?
        let number = try reader.integer("priority")
        do throws(APNsValidationError) {
            priority = try number.map { value throws(APNsValidationError) in try type.priority(value) }
        } catch {
            throw RequestProblem(field: "priority", error.description)
        }
        func standard() -> StandardPriority { priority.flatMap(StandardPriority.init) ?? .immediate }
        func appData() throws(RequestProblem) -> RawJSONObject {
            guard let data = reader.fields["data"] else { return try raw("{}", field: "data") }
            guard case .object = data else {
                throw RequestProblem(field: "data", "is \(data.typeName); app data is a JSON object")
            }
            return try raw(data.compactText, field: "data")
        }
        switch type {
        case .alert:
            let level = priority.map(AlertNotification<RawJSONObject>.Priority.init) ?? .immediate
            let alert = try reader.alert()
            let badge = try reader.integer("badge")
            let sound = try reader.sound()
            let thread = try reader.string("thread-id")
            let category = try reader.string("category")
            let interruption = try reader.interruptionLevel()
            let relevance = try reader.number("relevance-score")
            let available = try reader.bool("content-available") ?? false
            let mutable = try reader.bool("mutable-content") ?? false
            let target = try reader.string("target-content-id")
            let filter = try reader.string("filter-criteria")
            return AlertNotification(
                bundleID: app, appData: try appData(), priority: level, expiration: expiration, collapseID: collapse
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
                if let thread { ThreadID(thread) }
                if let category { APNs.Category(category) }
                if let interruption { interruption }
                if let relevance { RelevanceScore(relevance) }
                if available { ContentAvailable() }
                if mutable { MutableContent() }
                if let target { TargetContentID(target) }
                if let filter { FilterCriteria(filter) }
            }
        case .background:
            return BackgroundNotification(
                bundleID: app, appData: try appData(), expiration: expiration, collapseID: collapse)
        case .voip:
            return VoIPNotification(
                bundleID: app, appData: try appData(), priority: standard(), expiration: expiration,
                collapseID: collapse)
        case .complication:
            return ComplicationNotification(
                bundleID: app, appData: try appData(), priority: standard(), expiration: expiration,
                collapseID: collapse)
        case .pushtotalk:
            if let value = try reader.integer("expiration"), let required = type.requiredExpiration, value != required {
                throw RequestProblem(
                    field: "expiration", "pushtotalk notifications always expire at once (\(required)); leave it out")
            }
            return PushToTalkNotification(bundleID: app, appData: try appData(), collapseID: collapse)
        case .widgets:
            return WidgetNotification(bundleID: app, priority: standard(), expiration: expiration, collapseID: collapse)
        case .controls:
            return ControlsNotification(
                bundleID: app, priority: standard(), expiration: expiration, collapseID: collapse)
        case .location:
            return LocationNotification(
                bundleID: app, priority: standard(), expiration: expiration, collapseID: collapse)
        case .fileprovider:
            guard let container = try reader.string("container-identifier"), let domain = try reader.string("domain")
            else {
                throw RequestProblem(
                    field: "container-identifier", "fileprovider needs \"container-identifier\" and \"domain\"")
            }
            return FileProviderNotification(
                bundleID: app, containerIdentifier: container, domain: domain, priority: standard(),
                expiration: expiration,
                collapseID: collapse)
        case .mdm:
            guard let magic = try reader.string("push-magic") else {
                throw RequestProblem(field: "push-magic", "mdm needs the device's \"push-magic\" string")
            }
            return MDMNotification(
                topic: app, pushMagic: magic, priority: standard(), expiration: expiration, collapseID: collapse)
        case .accessory:
            let fields = try AccessoryFields(reader)
            return AccessoryNotification(
                bundleID: app, encryptedData: fields.encryptedData, sessionIdentifier: fields.sessionIdentifier,
                keyID: fields.keyID, messageIndex: fields.messageIndex, priority: standard(), expiration: expiration,
                collapseID: collapse)
        case .liveactivity:
            return try liveActivity(app: app, reader, priority: standard(), expiration: expiration, collapse: collapse)
        default:
            throw RequestProblem(field: "push-type", "the gateway does not send \(type.rawValue) notifications")
        }
    }

    private static func liveActivity(
        app: String, _ reader: FieldReader, priority: StandardPriority, expiration: Expiration?, collapse: CollapseID?
    ) throws(RequestProblem) -> any PushNotification {
        guard let stateValue = reader.fields["content-state"] else {
            throw RequestProblem(
                field: "content-state",
                "liveactivity needs \"content-state\", the activity's ContentState as a JSON object")
        }
        guard case .object = stateValue else {
            throw RequestProblem(field: "content-state", "is \(stateValue.typeName); it is a JSON object")
        }
        let state = try raw(stateValue.compactText, field: "content-state")
        let timestamp = Date(timeIntervalSince1970: TimeInterval(try reader.integer("timestamp") ?? 0))
        let stale = try reader.integer("stale-date").map { Date(timeIntervalSince1970: TimeInterval($0)) }
        let relevance = try reader.number("relevance-score")
        let sound = try reader.string("sound")
        var alert: LiveActivityAlert?
        if let text = try reader.alert() {
            if text.subtitle != nil || text.launchImage != nil {
                throw RequestProblem(
                    field: text.subtitle != nil ? "alert.subtitle" : "alert.launch-image",
                    "a Live Activity alert has a title and a body only")
            }
            alert = LiveActivityAlert(title: text.title ?? .text(""), body: text.body ?? .text(""), sound: sound)
        } else if sound != nil {
            throw RequestProblem(field: "sound", "a Live Activity plays a sound with its alert: give \"alert\" too")
        }
        let event = try reader.string("event") ?? ""
        let startOnly = ["attributes-type", "attributes", "input-push-token", "input-push-channel"].filter {
            reader.fields[$0] != nil
        }
        if event != "start", let first = startOnly.first {
            throw RequestProblem(field: first, "belongs to the start event")
        }
        if event != "end", reader.fields["dismissal-date"] != nil {
            throw RequestProblem(field: "dismissal-date", "belongs to the end event")
        }
        switch event {
        case "update":
            return LiveActivityNotification(
                bundleID: app, update: state, timestamp: timestamp, alert: alert, staleDate: stale,
                relevanceScore: relevance,
                priority: priority, expiration: expiration, collapseID: collapse)
        case "end":
            let dismissal = try reader.integer("dismissal-date").map { Date(timeIntervalSince1970: TimeInterval($0)) }
            return LiveActivityNotification(
                bundleID: app, end: state, timestamp: timestamp, dismissalDate: dismissal, alert: alert,
                staleDate: stale,
                relevanceScore: relevance, priority: priority, expiration: expiration, collapseID: collapse)
        case "start":
            guard let attributesType = try reader.string("attributes-type"),
                let attributesValue = reader.fields["attributes"]
            else {
                throw RequestProblem(
                    field: "attributes", "a Live Activity start needs \"attributes-type\" and \"attributes\"")
            }
            guard case .object = attributesValue else {
                throw RequestProblem(field: "attributes", "is \(attributesValue.typeName); it is a JSON object")
            }
            guard let alert else {
                throw RequestProblem(field: "alert", "a Live Activity start needs an alert with a title and a body")
            }
            let wantsToken = try reader.bool("input-push-token") ?? false
            let channel = try reader.string("input-push-channel")
            let input: LiveActivityPushInput?
            switch (wantsToken, channel) {
            case (true, nil): input = .token
            case (false, let id?):
                do { input = .channel(try BroadcastChannel(id: id, bundleID: app)) } catch {
                    throw RequestProblem(field: "input-push-channel", error.description)
                }
            case (false, nil): input = nil
            case (true, _?):
                throw RequestProblem(
                    field: "input-push-channel", "give \"input-push-token\" or \"input-push-channel\", not both")
            }
            return LiveActivityNotification(
                bundleID: app, start: state, attributesType: attributesType,
                attributes: try raw(attributesValue.compactText, field: "attributes"),
                alert: alert, timestamp: timestamp, pushInput: input, staleDate: stale, relevanceScore: relevance,
                priority: priority,
                expiration: expiration, collapseID: collapse)
        default:
            throw RequestProblem(field: "event", "liveactivity needs \"event\": \"start\", \"update\" or \"end\"")
        }
    }

    private static func raw(_ text: String, field: String) throws(RequestProblem) -> RawJSONObject {
        do { return try RawJSONObject(text) } catch { throw RequestProblem(field: field, error.description) }
    }
}

extension LocalizableText {
    /// The alert's title, subtitle or body from this text.
    var title: Title {
        switch self {
        case .text(let text): Title(text)
        case .localized(let key, let arguments): Title(localizedKey: key, arguments: arguments)
        }
    }
    var subtitle: Subtitle {
        switch self {
        case .text(let text): Subtitle(text)
        case .localized(let key, let arguments): Subtitle(localizedKey: key, arguments: arguments)
        }
    }
    var body: Body {
        switch self {
        case .text(let text): Body(text)
        case .localized(let key, let arguments): Body(localizedKey: key, arguments: arguments)
        }
    }
}

/// Typed access to request fields, with messages that name the field and the type it needs.
private struct FieldReader {
    let fields: [String: JSONValue]

    struct AlertText {
        var title, subtitle, body: LocalizableText?
        var launchImage: String?
    }

    func string(_ key: String) throws(RequestProblem) -> String? {
        switch fields[key] {
        case nil: return nil
        case .string(let value)?: return value
        case let other?: throw RequestProblem(field: key, "is \(other.typeName); give a string")
        }
    }

    func integer(_ key: String) throws(RequestProblem) -> Int? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value)?:
            guard let value = Int(exactly: value) else { throw RequestProblem(field: key, "is out of range") }
            return value
        case let other?: throw RequestProblem(field: key, "is \(other.typeName); give a whole number")
        }
    }

    /// `collapse-id`: 1 to 64 visible ASCII characters. The library takes any 64 bytes of UTF-8
    /// without control characters; the gateway takes the part of that which `openapi.yaml` can
    /// state exactly (a schema counts characters, not bytes), and an id is ASCII in practice.
    func collapseID() throws(RequestProblem) -> CollapseID? {
        guard let text = try string("collapse-id") else { return nil }
        guard !text.isEmpty, text.utf8.count <= CollapseID.maximumLength,
            text.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else {
            throw RequestProblem(
                field: "collapse-id",
                "give 1 to \(CollapseID.maximumLength) visible ASCII characters (letters, digits, punctuation, space); it travels in an HTTP header"
            )
        }
        return CollapseID(text)
    }

    func number(_ key: String) throws(RequestProblem) -> Double? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value)?: return Double(value)
        case .number(let value)?: return value
        case let other?: throw RequestProblem(field: key, "is \(other.typeName); give a number")
        }
    }

    func bool(_ key: String) throws(RequestProblem) -> Bool? {
        switch fields[key] {
        case nil: return nil
        case .bool(let value)?: return value
        case let other?: throw RequestProblem(field: key, "is \(other.typeName); give true or false")
        }
    }

    /// `"alert": "text"` (the body) or an object: `title`, `subtitle`, `body`, each either as text
    /// or localized (`title-loc-key` with `title-loc-args`, `subtitle-loc-key` with
    /// `subtitle-loc-args`, `loc-key` with `loc-args`), and `launch-image`.
    func alert() throws(RequestProblem) -> AlertText? {
        switch fields["alert"] {
        case nil: return nil
        case .string(let body)?: return AlertText(body: .text(body))
        case .object(let members)?:
            for key in members.keys.sorted() where !FieldReader.alertKeys.contains(key) {
                throw RequestProblem(
                    field: "alert.\(key)",
                    "is not an alert field; give \(FieldReader.alertKeys.sorted().joined(separator: ", "))")
            }
            func text(_ key: String) throws(RequestProblem) -> String? {
                switch members[key] {
                case nil: return nil
                case .string(let value)?: return value
                case let other?: throw RequestProblem(field: "alert.\(key)", "is \(other.typeName); give a string")
                }
            }
            func part(_ textKey: String, _ locKey: String, _ argsKey: String) throws(RequestProblem) -> LocalizableText?
            {
                let plain = try text(textKey)
                let key = try text(locKey)
                var arguments: [String] = []
                if let value = members[argsKey] {
                    guard key != nil else {
                        throw RequestProblem(
                            field: "alert.\(argsKey)", "needs \(locKey): the arguments fill its format")
                    }
                    guard case .array(let items) = value else {
                        throw RequestProblem(
                            field: "alert.\(argsKey)", "is \(value.typeName); give an array of strings")
                    }
                    for (index, item) in items.enumerated() {
                        guard case .string(let argument) = item else {
                            throw RequestProblem(
                                field: "alert.\(argsKey)[\(index)]", "is \(item.typeName); give a string")
                        }
                        arguments.append(argument)
                    }
                }
                switch (plain, key) {
                case (let plain?, nil): return .text(plain)
                case (nil, let key?): return .localized(key: key, arguments: arguments)
                case (nil, nil): return nil
                case (_?, _?):
                    throw RequestProblem(
                        field: "alert.\(locKey)", "give \(textKey) or \(locKey) (localized by the app), not both")
                }
            }
            return AlertText(
                title: try part("title", "title-loc-key", "title-loc-args"),
                subtitle: try part("subtitle", "subtitle-loc-key", "subtitle-loc-args"),
                body: try part("body", "loc-key", "loc-args"), launchImage: try text("launch-image"))
        case let other?:
            throw RequestProblem(
                field: "alert", "is \(other.typeName); give a string or an object with title, subtitle and body")
        }
    }

    static let alertKeys: Set<String> = [
        "title", "title-loc-key", "title-loc-args", "subtitle", "subtitle-loc-key", "subtitle-loc-args", "body",
        "loc-key", "loc-args", "launch-image",
    ]

    /// `"sound": "name"`, or a critical alert's `{"critical": 1, "name": …, "volume": 0…1}`.
    func sound() throws(RequestProblem) -> Sound? {
        switch fields["sound"] {
        case nil: return nil
        case .string(let name)?: return Sound(name)
        case .object(let members)?:
            for key in members.keys.sorted() where !["critical", "name", "volume"].contains(key) {
                throw RequestProblem(field: "sound.\(key)", "is not a sound field; give critical, name and volume")
            }
            let critical: Bool
            switch members["critical"] {
            case .integer(1)?, .bool(true)?: critical = true
            case .integer(0)?, .bool(false)?, nil: critical = false
            case let other?: throw RequestProblem(field: "sound.critical", "is \(other.compactText); give 1 or 0")
            }
            var name = "default"
            switch members["name"] {
            case nil: break
            case .string(let value)?: name = value
            case let other?: throw RequestProblem(field: "sound.name", "is \(other.typeName); give a string")
            }
            var volume: Double?
            switch members["volume"] {
            case nil: break
            case .integer(let value)?: volume = Double(value)
            case .number(let value)?: volume = value
            case let other?: throw RequestProblem(field: "sound.volume", "is \(other.typeName); give a number")
            }
            guard critical else {
                if volume != nil {
                    throw RequestProblem(field: "sound.volume", "applies to a critical alert: give \"critical\": 1")
                }
                return Sound(name)
            }
            let level = volume ?? 1
            guard level >= 0, level <= 1 else {
                throw RequestProblem(field: "sound.volume", "\(level) is not between 0 and 1")
            }
            return Sound.critical(name, volume: level)
        case let other?:
            throw RequestProblem(
                field: "sound", "is \(other.typeName); give a name or {\"critical\": 1, \"name\", \"volume\"}")
        }
    }

    func interruptionLevel() throws(RequestProblem) -> InterruptionLevel? {
        guard let name = try string("interruption-level") else { return nil }
        switch name {
        case "passive": return .passive
        case "active": return .active
        case "time-sensitive": return .timeSensitive
        case "critical": return .critical
        default:
            throw RequestProblem(
                field: "interruption-level", "\(name) is not one of passive, active, time-sensitive, critical")
        }
    }
}

/// An accessory's response in the gateway's JSON: `encrypted-data`, `session-identifier`,
/// `key-id` and `message-index`, named as the gateway names fields; the library checks their
/// contents (base64, not empty) and the problem then names the gateway's field.
private struct AccessoryFields {
    let encryptedData: String
    let sessionIdentifier: String
    let keyID: String
    let messageIndex: UInt64

    init(_ reader: FieldReader) throws(RequestProblem) {
        guard let encryptedData = try reader.string("encrypted-data"),
            let sessionIdentifier = try reader.string("session-identifier"), let keyID = try reader.string("key-id")
        else {
            throw RequestProblem(
                field: "encrypted-data",
                "accessory needs \"encrypted-data\", \"session-identifier\", \"key-id\" and \"message-index\", as the accessory sent them"
            )
        }
        guard let index = try reader.integer("message-index") else {
            throw RequestProblem(field: "message-index", "accessory needs the ratchet's \"message-index\"")
        }
        guard index >= 0 else { throw RequestProblem(field: "message-index", "is negative; give 0 or more") }
        self.encryptedData = encryptedData
        self.sessionIdentifier = sessionIdentifier
        self.keyID = keyID
        messageIndex = UInt64(index)
    }

    /// The gateway's field for a key of the accessory's `aps`.
    static func field(forPayloadKey key: String) -> String {
        switch key {
        case "encryptedData": return "encrypted-data"
        case "sessionIdentifier": return "session-identifier"
        case "keyID": return "key-id"
        default: return "message-index"
        }
    }
}
