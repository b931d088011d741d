#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What is wrong with a notification given as JSON: the field at fault, as its JSON path
/// (`devices[3]`, `alert.title`, `sound.volume`), and what to do — a front end's answer words it
/// as its own (the gateway's problem+json `detail`, the console's).
///
/// Thread safety: a value type; `Sendable`.
@_spi(Description)
public struct JSONProblem: Error, CustomStringConvertible, Sendable, Equatable {
    /// The field at fault, when one is.
    public let field: String?
    /// What is wrong and how to fix it.
    public let message: String

    public init(field: String? = nil, _ message: String) {
        self.field = field
        self.message = message
    }

    /// A description's problem, fields named as JSON names them.
    public init(_ problem: NotificationDescription.Problem) {
        self.init(
            field: problem.part.map { "alert.\($0.rawValue)" } ?? problem.field.rawValue,
            problem.message(naming: { "\"\($0.rawValue)\"" }))
    }

    public var description: String { field.map { "\($0): \(message)" } ?? message }
}

extension NotificationDescription {
    /// A notification given as the fields of a JSON object (`"push-type"`, `"bundle-id"`,
    /// `"alert"`, … as ``NotificationField`` names them), each read with its type checked. Keys in
    /// `frontEndFields` are the front end's own (the gateway's `devices` and `send-at`) and are
    /// left to it; any other key is refused, `unknownField` saying where the fields are described.
    ///
    /// - Throws: ``JSONProblem`` naming the field.
    public init(
        json fields: [String: JSONValue], frontEndFields: Set<String> = [], unknownField: String
    ) throws(JSONProblem) {
        let reader = JSONFieldReader(fields: fields)
        guard let typeName = try reader.string(NotificationField.pushType.rawValue) else {
            throw JSONProblem(
                field: NotificationField.pushType.rawValue,
                "is missing; give one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.init(pushType: typeName)
        let name: PushType.Name
        do { name = try checkedPushType() } catch { throw JSONProblem(error) }
        for key in fields.keys.sorted() where !frontEndFields.contains(key) {
            guard let field = NotificationField(rawValue: key) else {
                throw JSONProblem(field: key, unknownField)
            }
            try reader.read(field, into: &self, for: name)
        }
    }
}

extension JSONValue {
    /// `body` as a JSON object, or a problem that says what it is instead.
    public static func object(_ body: [UInt8]) throws(JSONProblem) -> [String: JSONValue] {
        do {
            return try JSONDecoder().decode([String: JSONValue].self, from: Data(body))
        } catch {
            if let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) {
                throw JSONProblem("the body is \(value.typeName); give a JSON object")
            }
            throw JSONProblem("the body is not valid JSON: \(describe(error))")
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .dataCorrupted(let context)?: return context.underlyingError.map { "\($0)" } ?? context.debugDescription
        case .typeMismatch(_, let context)?: return context.debugDescription
        default: return "\(error)"
        }
    }
}

/// Typed access to the fields of a JSON object, with messages that name the field and the type it
/// needs: how every front end that takes a notification as JSON (the gateway's requests, the mock
/// console's composer) reads it into a ``NotificationDescription``, so that they name fields and
/// types alike.
///
/// Thread safety: a value type; `Sendable`.
@_spi(Description)
public struct JSONFieldReader: Sendable {
    public let fields: [String: JSONValue]

    public init(fields: [String: JSONValue]) { self.fields = fields }

    public func string(_ key: String) throws(JSONProblem) -> String? {
        switch fields[key] {
        case nil: return nil
        case .string(let value)?: return value
        case let other?: throw JSONProblem(field: key, "is \(other.typeName); give a string")
        }
    }

    public func integer(_ key: String) throws(JSONProblem) -> Int? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value)?:
            guard let value = Int(exactly: value) else { throw JSONProblem(field: key, "is out of range") }
            return value
        case let other?: throw JSONProblem(field: key, "is \(other.typeName); give a whole number")
        }
    }

    /// `collapse-id`: 1 to 64 visible ASCII characters. The library takes any 64 bytes of UTF-8
    /// without control characters; a JSON front end takes the part of that which an OpenAPI document
    /// can state exactly (a schema counts characters, not bytes), and an id is ASCII in practice.
    public func collapseID() throws(JSONProblem) -> String? {
        guard let text = try string("collapse-id") else { return nil }
        guard !text.isEmpty, text.utf8.count <= CollapseID.maximumLength,
            text.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else {
            throw JSONProblem(
                field: "collapse-id",
                "give 1 to \(CollapseID.maximumLength) visible ASCII characters (letters, digits, punctuation, space); it travels in an HTTP header"
            )
        }
        return text
    }

    public func number(_ key: String) throws(JSONProblem) -> Double? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value)?: return Double(value)
        case .number(let value)?: return value
        case let other?: throw JSONProblem(field: key, "is \(other.typeName); give a number")
        }
    }

    public func bool(_ key: String) throws(JSONProblem) -> Bool? {
        switch fields[key] {
        case nil: return nil
        case .bool(let value)?: return value
        case let other?: throw JSONProblem(field: key, "is \(other.typeName); give true or false")
        }
    }

    /// `"alert": "text"` (the body) or an object: `title`, `subtitle`, `body`, each either as text
    /// or localized (`title-loc-key` with `title-loc-args`, `subtitle-loc-key` with
    /// `subtitle-loc-args`, `loc-key` with `loc-args`), and `launch-image`.
    public func alert() throws(JSONProblem) -> NotificationDescription.AlertText? {
        switch fields["alert"] {
        case nil: return nil
        case .string(let body)?: return NotificationDescription.AlertText(body: .text(body))
        case .object(let members)?:
            for key in members.keys.sorted() where !JSONFieldReader.alertKeys.contains(key) {
                throw JSONProblem(
                    field: "alert.\(key)",
                    "is not an alert field; give \(JSONFieldReader.alertKeys.sorted().joined(separator: ", "))")
            }
            func text(_ key: String) throws(JSONProblem) -> String? {
                switch members[key] {
                case nil: return nil
                case .string(let value)?: return value
                case let other?: throw JSONProblem(field: "alert.\(key)", "is \(other.typeName); give a string")
                }
            }
            func part(_ textKey: String, _ locKey: String, _ argsKey: String) throws(JSONProblem) -> LocalizableText? {
                let plain = try text(textKey)
                let key = try text(locKey)
                var arguments: [String] = []
                if let value = members[argsKey] {
                    guard key != nil else {
                        throw JSONProblem(
                            field: "alert.\(argsKey)", "needs \(locKey): the arguments fill its format")
                    }
                    guard case .array(let items) = value else {
                        throw JSONProblem(
                            field: "alert.\(argsKey)", "is \(value.typeName); give an array of strings")
                    }
                    for (index, item) in items.enumerated() {
                        guard case .string(let argument) = item else {
                            throw JSONProblem(
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
                    throw JSONProblem(
                        field: "alert.\(locKey)", "give \(textKey) or \(locKey) (localized by the app), not both")
                }
            }
            return NotificationDescription.AlertText(
                title: try part("title", "title-loc-key", "title-loc-args"),
                subtitle: try part("subtitle", "subtitle-loc-key", "subtitle-loc-args"),
                body: try part("body", "loc-key", "loc-args"), launchImage: try text("launch-image"))
        case let other?:
            throw JSONProblem(
                field: "alert", "is \(other.typeName); give a string or an object with title, subtitle and body")
        }
    }

    static let alertKeys: Set<String> = [
        "title", "title-loc-key", "title-loc-args", "subtitle", "subtitle-loc-key", "subtitle-loc-args", "body",
        "loc-key", "loc-args", "launch-image",
    ]

    /// `"sound": "name"`, or a critical alert's `{"critical": 1, "name": …, "volume": 0…1}`.
    public func sound() throws(JSONProblem) -> Sound? {
        switch fields["sound"] {
        case nil: return nil
        case .string(let name)?: return Sound(name)
        case .object(let members)?:
            for key in members.keys.sorted() where !["critical", "name", "volume"].contains(key) {
                throw JSONProblem(field: "sound.\(key)", "is not a sound field; give critical, name and volume")
            }
            let critical: Bool
            switch members["critical"] {
            case .integer(1)?, .bool(true)?: critical = true
            case .integer(0)?, .bool(false)?, nil: critical = false
            case let other?: throw JSONProblem(field: "sound.critical", "is \(other.compactText); give 1 or 0")
            }
            var name = "default"
            switch members["name"] {
            case nil: break
            case .string(let value)?: name = value
            case let other?: throw JSONProblem(field: "sound.name", "is \(other.typeName); give a string")
            }
            var volume: Double?
            switch members["volume"] {
            case nil: break
            case .integer(let value)?: volume = Double(value)
            case .number(let value)?: volume = value
            case let other?: throw JSONProblem(field: "sound.volume", "is \(other.typeName); give a number")
            }
            guard critical else {
                if volume != nil {
                    throw JSONProblem(field: "sound.volume", "applies to a critical alert: give \"critical\": 1")
                }
                return Sound(name)
            }
            let level = volume ?? 1
            guard level >= 0, level <= 1 else {
                throw JSONProblem(field: "sound.volume", "\(level) is not between 0 and 1")
            }
            return Sound.critical(name, volume: level)
        case let other?:
            throw JSONProblem(
                field: "sound", "is \(other.typeName); give a name or {\"critical\": 1, \"name\", \"volume\"}")
        }
    }

}

extension JSONFieldReader {
    /// Reads `field` into `description`; a `switch` without `default`, so that a field the library
    /// adds fails to compile here until JSON front ends read it (and their OpenAPI documents
    /// describe it).
    public func read(
        _ field: NotificationField, into description: inout NotificationDescription, for pushType: PushType.Name
    ) throws(JSONProblem) {
        let key = field.rawValue
        switch field {
        case .pushType: break
        case .bundleID, .topic:
            guard (field == .topic) == (pushType == .mdm) else {
                throw JSONProblem(
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
            // A Live Activity's alert plays a sound by name only (a string in the OpenAPI documents).
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
    public func object(_ key: String, _ rule: String) throws(JSONProblem) -> RawJSONObject? {
        guard let value = fields[key] else { return nil }
        guard case .object = value else { throw JSONProblem(field: key, "is \(value.typeName); \(rule)") }
        do { return try RawJSONObject(value.compactText) } catch {
            // Its validation error's words, as every other field's problem says them.
            guard case .validation(let problem) = error else { throw JSONProblem(field: key, error.description) }
            throw JSONProblem(field: key, problem.description)
        }
    }
}

extension NotificationField {
    /// What a field's JSON value is, for a form that offers it (the mock console's composer) and an
    /// OpenAPI document that describes it: the kinds ``JSONFieldReader/read(_:into:for:)`` reads.
    public enum JSONKind: Sendable, Equatable {
        case string, integer, number, boolean
        /// A JSON object: app data, a Live Activity's content state or attributes.
        case object
        /// A string or an object with `title`, `subtitle`, `body` (each plain or localized) and
        /// `launch-image`.
        case alert
        /// A sound's name, or (for an alert) a critical sound's object.
        case sound
        /// One of these strings.
        case choice([String])
    }

    /// The kind of this field's JSON value: a `switch` without `default` beside the reader, so a
    /// field added reads and describes together.
    public var jsonKind: JSONKind {
        switch self {
        case .pushType: .choice(PushType.Name.allCases.map(\.rawValue))
        case .bundleID, .topic, .collapseID, .apnsID, .threadID, .category, .targetContentID, .filterCriteria,
            .containerIdentifier, .domain, .encryptedData, .sessionIdentifier, .keyID, .pushMagic, .attributesType,
            .inputPushChannel:
            .string
        case .priority, .expiration, .badge, .messageIndex, .timestamp, .dismissalDate, .staleDate: .integer
        case .relevanceScore: .number
        case .contentAvailable, .mutableContent, .inputPushToken: .boolean
        case .appData, .contentState, .attributes: .object
        case .alert: .alert
        case .sound: .sound
        case .interruptionLevel:
            .choice(
                [InterruptionLevel.passive, .active, .timeSensitive, .critical].map(\.rawValue))
        case .event: .choice([LiveActivityEvent.Start.name, LiveActivityEvent.Update.name, LiveActivityEvent.End.name])
        }
    }
}
