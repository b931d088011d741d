@_spi(Description) import APNs
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
package struct NotificationRequest: Sendable {
    /// The push type.
    package let pushType: PushType
    /// The app the notification is for: its bundle id (for `mdm`, the MDM topic). API keys are
    /// allowed by this name.
    package let app: String
    /// The APNs environment it names (`"environment"`), or nil for its app's credential's default.
    package let environment: GatewayEnvironment?
    /// The devices, each token checked; empty when the notification goes to a ``channel``.
    package let devices: [Device]
    /// When it is due (`send-at`), or nil for at once: never claimed before then.
    package let sendAt: Date?
    /// How far ahead a `send-at` may be: a schedule longer than this belongs in the app, which
    /// still knows then whether the push is wanted.
    package static let maximumScheduleAhead: Duration = .seconds(30 * 86_400)
    /// The smallest `send-at` taken (1973 in milliseconds): a smaller number is seconds, a mistake.
    static let earliestSendAt: Int64 = 100_000_000_000
    /// The typed notification, every rule checked.
    package let notification: any PushNotification
    /// The body without `devices`, compact with sorted keys: what the queue stores and the sender
    /// reads back (``NotificationRequest/init(storedJSON:)``). A Live Activity's `timestamp`, when
    /// absent, is fixed here at acceptance so that every device gets the same one.
    package let storedJSON: String

    /// Reads and checks a request body; `maximumDevices` bounds `devices`.
    ///
    /// - Throws: ``RequestProblem`` naming the field and the rule, with nothing queued.
    package init(body: [UInt8], maximumDevices: Int, now: Date = Date()) throws(RequestProblem) {
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
        if let sendAt = spec.sendAt {
            guard sendAt <= now + NotificationRequest.maximumScheduleAhead else {
                throw RequestProblem(
                    field: NotificationSpec.sendAtField,
                    "is \(Int((sendAt - now).seconds / 86_400)) days ahead; a notification may be scheduled at most \(Int(NotificationRequest.maximumScheduleAhead.seconds / 86_400)) days ahead: keep a later one in the app and post it nearer its time",
                    kind: .unprocessable)
            }
            if let expiration = spec.notification.expiration?.unixSeconds, expiration > 0,
                Double(expiration) < sendAt.timeIntervalSince1970
            {
                throw RequestProblem(
                    field: NotificationSpec.sendAtField,
                    "is after the notification's expiration (\(expiration) UNIX seconds): it would expire before it is due; give a later expiration or an earlier send-at",
                    kind: .unprocessable)
            }
        }
        self.pushType = spec.pushType
        self.app = spec.app
        self.environment = spec.environment
        self.sendAt = spec.sendAt
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
    package let channel: BroadcastChannel?

    /// What the queue stores per target: each device's token, or `channel:` and the channel id.
    package var targets: [String] {
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
    /// the app's credential (`policy`) may send this push type to the environment it names.
    package func check(for policy: CredentialPolicy) throws(RequestProblem) {
        if let environment, !policy.environments.contains(environment) {
            throw RequestProblem(
                field: NotificationSpec.environmentField,
                "the credential that serves \(app) (\(policy.credential)) sends to \(policy.environments.map(\.rawValue).joined(separator: " and ")) only; leave \"environment\" out or give one of those",
                kind: .notForThisGateway)
        }
        try check(for: policy.authenticationMethod)
    }

    /// Checks the rules that need a request (payload size, what the push type allows) and that
    /// a connector authenticating with `method` may send this push type.
    package func check(for method: AuthenticationMethod) throws(RequestProblem) {
        do {
            if let channel, let broadcast = notification as? any BroadcastDeliverable {
                try broadcast.validatedRequest(to: channel).checkRules(for: method)
            } else if let device = devices.first {
                try notification.validatedRequest(to: device).checkRules(for: method)
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
            if case .invalidAccessoryField(let name) = error {
                field = NotificationField(accessoryMember: name)?.rawValue
            }
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
package struct RequestProblem: Error, CustomStringConvertible, Sendable, Equatable {
    /// Which answer a problem gets.
    package enum Kind: Sendable, Equatable {
        /// The body breaks a rule `openapi.yaml` states: 400.
        case invalid
        /// The notification's APNs payload is over its push type's limit, which a schema cannot
        /// state (it counts encoded bytes): 413.
        case tooLarge
        /// A valid notification that the gateway's APNs credential cannot send (mdm needs a
        /// certificate; widgets, controls, location and fileprovider a token): 403.
        case notForThisGateway
        /// A rule about time a schema cannot state (a `send-at` too far ahead, or after the
        /// notification's expiration): 422.
        case unprocessable
    }

    /// The field at fault (`devices[3]`, `alert.title`), when one is.
    package let field: String?
    /// What is wrong and how to fix it.
    package let message: String
    /// Which answer it gets.
    package let kind: Kind

    init(field: String? = nil, _ message: String, kind: Kind = .invalid) {
        self.field = field
        self.message = message
        self.kind = kind
    }

    package var description: String { field.map { "\($0): \(message)" } ?? message }
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

/// The notification fields of a request (everything but `devices`), read into the library's
/// description of a notification, which builds the push type's typed notification: the `apns`
/// command reads its flags into the same description, so both follow one set of rules.
struct NotificationSpec: Sendable {
    let pushType: PushType
    let app: String
    let notification: any PushNotification
    /// The client's `apns-id`, when it gave one (one device or a channel only).
    let apnsID: APNsID?
    /// What a crash may cost: a repeat (`at-least-once`, the default) or a loss (`at-most-once`).
    let delivery: DeliverySemantics

    /// Where it is sent: nil for its app's credential's default (the first it allows).
    let environment: GatewayEnvironment?
    /// When it is sent (`send-at`): nil for at once.
    let sendAt: Date?

    /// The gateway's own fields beside the notification's.
    static let deliveryField = "delivery"
    static let environmentField = "environment"
    static let sendAtField = "send-at"

    init(_ fields: [String: JSONValue]) throws(RequestProblem) {
        let reader = FieldReader(fields: fields)
        guard let typeName = try reader.string(NotificationField.pushType.rawValue) else {
            throw RequestProblem(
                field: NotificationField.pushType.rawValue,
                "is missing; give one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var description = NotificationDescription(pushType: typeName)
        let name: PushType.Name
        do { name = try description.checkedPushType() } catch { throw RequestProblem(error) }
        var delivery = DeliverySemantics.atLeastOnce
        var environment: GatewayEnvironment?
        var sendAt: Date?
        for key in fields.keys.sorted() {
            if key == NotificationSpec.sendAtField {
                sendAt = try reader.sendAt()
            } else if key == NotificationSpec.deliveryField {
                delivery = try reader.delivery()
            } else if key == NotificationSpec.environmentField {
                environment = try reader.environment()
            } else if let field = NotificationField(rawValue: key) {
                try reader.read(field, into: &description, for: name)
            } else {
                throw RequestProblem(field: key, "is not a field of a notification request; see openapi.yaml")
            }
        }
        do {
            // A Live Activity's timestamp is fixed at acceptance (NotificationRequest), so `now`
            // is never used for one read from a request or from the queue.
            notification = try description.notification(now: Date(timeIntervalSince1970: 0))
        } catch {
            throw RequestProblem(error)
        }
        self.pushType = name.pushType
        self.app = description.app ?? ""
        self.apnsID = notification.apnsID
        self.delivery = delivery
        self.environment = environment
        self.sendAt = sendAt
    }
}

extension RequestProblem {
    /// A description's problem in the gateway's words: fields by their JSON names.
    init(_ problem: NotificationDescription.Problem) {
        self.init(
            field: problem.part.map { "alert.\($0.rawValue)" } ?? problem.field.rawValue,
            problem.message(naming: { "\"\($0.rawValue)\"" }))
    }
}

/// Typed access to request fields, with messages that name the field and the type it needs.
struct FieldReader {
    let fields: [String: JSONValue]

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
    func collapseID() throws(RequestProblem) -> String? {
        guard let text = try string("collapse-id") else { return nil }
        guard !text.isEmpty, text.utf8.count <= CollapseID.maximumLength,
            text.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else {
            throw RequestProblem(
                field: "collapse-id",
                "give 1 to \(CollapseID.maximumLength) visible ASCII characters (letters, digits, punctuation, space); it travels in an HTTP header"
            )
        }
        return text
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
    func alert() throws(RequestProblem) -> NotificationDescription.AlertText? {
        switch fields["alert"] {
        case nil: return nil
        case .string(let body)?: return NotificationDescription.AlertText(body: .text(body))
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
            return NotificationDescription.AlertText(
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

}

extension FieldReader {
    /// Reads `field` into `description`; a `switch` without `default`, so that a field the library
    /// adds fails to compile here until the gateway reads it (and `openapi.yaml` describes it).
    func read(
        _ field: NotificationField, into description: inout NotificationDescription, for pushType: PushType.Name
    ) throws(RequestProblem) {
        let key = field.rawValue
        switch field {
        case .pushType: break
        case .bundleID, .topic:
            guard (field == .topic) == (pushType == .mdm) else {
                throw RequestProblem(
                    field: key,
                    pushType == .mdm
                        ? "mdm is addressed by \"topic\" (the MDM push certificate's topic), not a bundle id"
                        : "give the app as \"bundle-id\"; the topic follows from it and the push type")
            }
            description.app = try string(key)
        case .priority: description.priority = try integer(key)
        case .expiration: description.expiration = try integer(key)
        case .collapseID: description.collapseID = try collapseID()
        case .apnsID: description.apnsID = try string(key)
        case .alert: description.alert = try alert()
        case .badge: description.badge = try integer(key)
        case .sound:
            // A Live Activity's alert plays a sound by name only (openapi.yaml: a string).
            description.sound = try pushType == .liveactivity ? string(key).map { Sound($0) } : sound()
        case .threadID: description.threadID = try string(key)
        case .category: description.category = try string(key)
        case .interruptionLevel: description.interruptionLevel = try string(key)
        case .relevanceScore: description.relevanceScore = try number(key)
        case .contentAvailable: description.contentAvailable = try bool(key)
        case .mutableContent: description.mutableContent = try bool(key)
        case .targetContentID: description.targetContentID = try string(key)
        case .filterCriteria: description.filterCriteria = try string(key)
        case .appData: description.appData = try object(key, "app data is a JSON object")
        case .containerIdentifier: description.containerIdentifier = try string(key)
        case .domain: description.domain = try string(key)
        case .encryptedData: description.encryptedData = try string(key)
        case .sessionIdentifier: description.sessionIdentifier = try string(key)
        case .keyID: description.keyID = try string(key)
        case .messageIndex: description.messageIndex = try integer(key)
        case .pushMagic: description.pushMagic = try string(key)
        case .event: description.event = try string(key)
        case .contentState: description.contentState = try object(key, "it is a JSON object")
        case .timestamp: description.timestamp = try integer(key)
        case .dismissalDate: description.dismissalDate = try integer(key)
        case .staleDate: description.staleDate = try integer(key)
        case .attributesType: description.attributesType = try string(key)
        case .attributes: description.attributes = try object(key, "it is a JSON object")
        case .inputPushToken: description.inputPushToken = try bool(key)
        case .inputPushChannel: description.inputPushChannel = try string(key)
        }
    }

    /// A JSON object, as the library's raw JSON; `rule` says what the field must be.
    func object(_ key: String, _ rule: String) throws(RequestProblem) -> RawJSONObject? {
        guard let value = fields[key] else { return nil }
        guard case .object = value else { throw RequestProblem(field: key, "is \(value.typeName); \(rule)") }
        do { return try RawJSONObject(value.compactText) } catch {
            // Its validation error's words, as every other field's problem says them.
            guard case .validation(let problem) = error else { throw RequestProblem(field: key, error.description) }
            throw RequestProblem(field: key, problem.description)
        }
    }

    func delivery() throws(RequestProblem) -> DeliverySemantics {
        let key = NotificationSpec.deliveryField
        guard let text = try string(key) else { return .atLeastOnce }
        guard let semantics = DeliverySemantics(rawValue: text) else {
            throw RequestProblem(
                field: key,
                "\(text) is not a delivery semantics; give at-least-once (the default: after a crash, what may have been sent is sent again) or at-most-once (it is reported failed with delivery unknown instead)"
            )
        }
        return semantics
    }

    /// `send-at`: milliseconds since 1970, as the gateway writes every time; a number that reads
    /// as seconds (before 1973 in milliseconds) is refused rather than sent at once.
    func sendAt() throws(RequestProblem) -> Date? {
        let key = NotificationSpec.sendAtField
        guard let milliseconds = try integer(key) else { return nil }
        guard milliseconds >= NotificationRequest.earliestSendAt else {
            throw RequestProblem(
                field: key,
                "\(milliseconds) is before 1973 in milliseconds since 1970 — seconds, most likely; give milliseconds (\(milliseconds) × 1000), or leave it out to send at once"
            )
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    func environment() throws(RequestProblem) -> GatewayEnvironment? {
        let key = NotificationSpec.environmentField
        guard let text = try string(key) else { return nil }
        guard let environment = GatewayEnvironment(rawValue: text) else {
            throw RequestProblem(
                field: key,
                "\(text) is not an APNs environment; give sandbox or production, or leave it out for the app's credential's default"
            )
        }
        return environment
    }
}
