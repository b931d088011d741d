/// A notification, target or option that APNs would reject, found before any byte is sent.
///
/// Each case names the rule and the values involved; ``description`` says how to fix it. Thrown by
/// request building (``PushNotification/request(to:)``), by ``Device/init(token:)`` and by the
/// other validating initialisers of this module.
public enum APNsValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The encoded payload is larger than the push type allows.
    case payloadTooLarge(pushType: PushType, size: Int, limit: Int)
    /// The payload is still larger than the limit with every truncatable field cut: what is left
    /// (app data, other keys) must shrink.
    case payloadTooLargeAfterTruncation(pushType: PushType, size: Int, limit: Int, fields: [String])
    /// The collapse id is longer than 64 bytes of UTF-8.
    case collapseIDTooLong(bytes: Int, limit: Int)
    /// The collapse id is empty.
    case emptyCollapseID
    /// A header value would contain a control character.
    case controlCharacterInHeader(header: String)
    /// The bundle id (or MDM topic) is empty or has characters a bundle id cannot have.
    case invalidTopic(String)
    /// The device token is not an even number of hex digits.
    case invalidDeviceToken(String)
    /// The expiration is a negative number of seconds.
    case invalidExpiration(Int)
    /// App data wrote the root key `aps`, which APNs reserves.
    case reservedAppDataKey(String)
    /// App data did not encode as a keyed container (a JSON object).
    case appDataNotAnObject
    /// A number in the payload is NaN or infinite; JSON cannot carry it.
    case nonFiniteNumber(path: String)
    /// App data threw while encoding.
    case appDataEncodingFailed(String)
    /// The same payload component was given more than once.
    case duplicateComponent(String)
    /// `mutable-content` was set on an alert with no title, subtitle or body.
    case mutableContentWithoutAlertText
    /// A relevance score outside 0…1 on a notification.
    case relevanceScoreOutOfRange(Double)
    /// A negative badge number.
    case negativeBadge(Int)
    /// A critical sound volume outside 0…1.
    case criticalVolumeOutOfRange(Double)
    /// An `Alert { }` with no component.
    case emptyAlert
    /// A value that must be a JSON object (content-state, attributes, app data of PushKit types)
    /// encoded as something else.
    case notAnObject(key: String)
    /// A date before 1970 or too far in the future to send.
    case invalidDate(key: String)
    /// A date past the year 5000, which is a count of milliseconds read as seconds: APNs takes
    /// UNIX seconds (``Expiration/millisecondsThreshold``).
    case dateInMilliseconds(key: String)
    /// An MDM topic that is not a push certificate UID.
    case invalidMDMTopic(String)
    /// A broadcast channel id that is not base64.
    case invalidChannelID(String)
    /// A collapse id on a broadcast, which channels do not support.
    case collapseIDOnBroadcast
    /// A non-zero expiration for a channel that stores no message.
    case expirationOnUnstoredChannel(Int)
    /// A send's timeout that is not positive, or is over 24 hours.
    case invalidTimeout(Duration)
    /// A transport setting no connection can use (a timeout that is not positive or over 24 hours, a
    /// limit out of its range); `value` names the range.
    case invalidTransportSetting(name: String, value: String)
    /// An `apns-push-type` Apple does not define.
    case unknownPushType(String)
    /// The push type does not accept the connector's authentication (an MDM push through a token
    /// connector, a widget push through a certificate connector).
    case authenticationNotAllowed(pushType: PushType, method: AuthenticationMethod)
    /// A priority the push type does not accept.
    case priorityNotAllowed(pushType: PushType, priority: String)
    /// The push type requires this expiration (push-to-talk: 0).
    case expirationRequired(pushType: PushType, seconds: Int)
    /// A push type that cannot be sent to a broadcast channel (only Live Activity updates and ends can).
    case notBroadcastable(PushType)
    /// A topic that is not the bundle id plus the push type's suffix, or a bundle id that already
    /// ends in a push type's suffix.
    case topicNotForPushType(pushType: PushType, topic: String)
    /// A bulk send of a notification with an apns-id, which identifies one push, not one per device.
    case apnsIDInBulkSend
    /// A Live Activity payload whose `aps.event` is missing, not a string, or not `start`,
    /// `update` or `end` (nil when missing or not a string).
    case invalidLiveActivityEvent(String?)
    /// A Live Activity start addressed to a broadcast channel: a start goes to a push-to-start token.
    case liveActivityStartToChannel
    /// A Live Activity payload without a key its event needs (`aps.alert` on a start, say).
    case missingLiveActivityKey(event: String, key: String)
    /// An accessory response field that is not as the accessory sends it: `encryptedData` or
    /// `keyID` not standard base64, or `sessionIdentifier` empty (the field's name).
    case invalidAccessoryField(String)

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        switch self {
        case let .payloadTooLarge(pushType, size, limit):
            return
                "The \(pushType) payload is \(size) bytes; APNs accepts at most \(limit). Shorten the text, let truncatedToFit() shorten it, or move data out of the notification (the app can fetch it)."
        case let .payloadTooLargeAfterTruncation(pushType, size, limit, fields):
            return
                "The \(pushType) payload is still \(size) bytes with \(fields.joined(separator: ", ")) cut short; APNs accepts at most \(limit). Move other data out of the notification (the app can fetch it)."
        case let .collapseIDTooLong(bytes, limit):
            return
                "The collapse id is \(bytes) bytes of UTF-8; APNs accepts at most \(limit). Use a shorter id, for example a hash of the long one."
        case .emptyCollapseID:
            return "The collapse id is empty. Leave it nil to send none."
        case let .controlCharacterInHeader(header):
            return
                "The value for \(header) contains a control character, which cannot travel in an HTTP header. Remove it."
        case let .invalidTopic(topic):
            return
                "\"\(topic)\" is not a valid bundle id: use letters, digits, '-' and '.', for example com.example.app."
        case let .invalidDeviceToken(reason):
            return "Invalid device token: \(reason)."
        case let .invalidExpiration(seconds):
            return "The expiration \(seconds) is negative. Use Expiration.immediately (0) or a date after 1970."
        case let .reservedAppDataKey(key):
            return
                "App data writes the root key \"\(key)\", which APNs reserves for its own dictionary. Rename that property (for example with CodingKeys)."
        case .appDataNotAnObject:
            return
                "App data must encode as a keyed container (a JSON object) so its keys can sit beside \"aps\". Wrap arrays and single values in a struct."
        case let .nonFiniteNumber(path):
            return
                "The number at \(path) is NaN or infinite, which JSON cannot represent. Send a finite number or omit it."
        case let .appDataEncodingFailed(message):
            return "App data failed to encode: \(message)."
        case let .duplicateComponent(name):
            return "\(name) is given more than once in the notification. Keep one."
        case .mutableContentWithoutAlertText:
            return
                "MutableContent() needs an alert with a title, subtitle or body, or the notification service extension never runs. Add one, or drop MutableContent()."
        case let .relevanceScoreOutOfRange(score):
            return "The relevance score \(score) is outside 0…1. Use a value from 0 (least relevant) to 1 (most)."
        case let .negativeBadge(badge):
            return "The badge \(badge) is negative. Use 0 to clear the badge, or a positive count."
        case let .criticalVolumeOutOfRange(volume):
            return "The critical sound volume \(volume) is outside 0…1."
        case .emptyAlert:
            return "The Alert has no title, subtitle, body or other content. Add a Body, or use Alert(\"text\")."
        case let .notAnObject(key):
            return "\(key) must encode as a keyed container (a JSON object); wrap arrays and single values in a struct."
        case let .invalidMDMTopic(topic):
            return
                "\"\(topic)\" is not an MDM topic: use the UID of your MDM push certificate, which starts with com.apple.mgmt."
        case let .invalidAccessoryField(field):
            return field == "sessionIdentifier"
                ? "The accessory response's sessionIdentifier is empty: pass the session identifier the accessory sent with its response."
                : "The accessory response's \(field) is not standard base64: pass it exactly as the accessory sent it (A–Z, a–z, 0–9, + and /, padded with = to a multiple of 4)."
        case let .invalidChannelID(id):
            return
                "\"\(id)\" is not a broadcast channel id: use the base64 id APNs returned when the channel was created."
        case .collapseIDOnBroadcast:
            return "Broadcasts have no collapse id (protocol reference, Broadcast channels); remove it."
        case let .expirationOnUnstoredChannel(seconds):
            return
                "The channel stores no message, so APNs rejects expiration \(seconds) (BadExpirationDate). Use Expiration.immediately, or create the channel with .mostRecentMessageStored."
        case let .invalidTimeout(timeout):
            return
                "The timeout \(timeout) is not positive or is over 24 hours. Pass, for example, .seconds(10), or nil for the connector's default."
        case let .invalidTransportSetting(name, value):
            return "TransportConfiguration.\(name) is \(value)."
        case let .unknownPushType(name):
            return
                "\"\(name)\" is not an APNs push type; use one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))."
        case let .authenticationNotAllowed(pushType, method):
            let accepted = AuthenticationMethod.allCases.filter { pushType.authentication.contains($0) }.map(\.rawValue)
            return
                "\(pushType) pushes cannot be sent through a \(method) connector; APNs accepts them only with \(accepted.joined(separator: " or ")) authentication. Send them through a connector made with that credential."
        case let .priorityNotAllowed(pushType, priority):
            let allowed = pushType.allowedPriorities.sorted(by: >).map(\.description)
            let advice =
                allowed.count == 1
                ? "it is always \(allowed[0])"
                : "use " + allowed.dropLast().joined(separator: ", ") + " or " + (allowed.last ?? "")
            return "Priority \(priority) is not allowed for \(pushType) pushes: \(advice)."
        case let .expirationRequired(pushType, seconds):
            return "\(pushType) pushes must have apns-expiration \(seconds)."
        case let .notBroadcastable(pushType):
            return
                "\(pushType) pushes cannot be sent to a broadcast channel; only Live Activity updates and ends can (protocol reference, Broadcast channels). Send to devices instead."
        case let .topicNotForPushType(pushType, topic):
            let suffix = pushType.topicSuffix ?? ""
            if !suffix.isEmpty, topic.hasSuffix(suffix + suffix) {
                return
                    "\"\(topic)\" repeats the \(pushType) suffix \"\(suffix)\": the bundle id given already ended with it. Pass the app's bundle id (\"\(topic.dropLast(2 * suffix.count))\"); swift-apns appends \"\(suffix)\"."
            }
            return
                "\"\(topic)\" is not a \(pushType) topic: it must be the bare bundle id\(suffix.isEmpty ? "" : " followed by \"\(suffix)\"") — pass the bundle id without any push-type suffix; swift-apns appends it."
        case .apnsIDInBulkSend:
            return
                "An apns-id identifies one push, but a bulk send makes one push per device. Leave apnsID nil (APNs assigns each push its own and returns it in each outcome), or send to each device with its own apns-id."
        case let .invalidLiveActivityEvent(event):
            return
                "A Live Activity payload needs aps.event \"start\", \"update\" or \"end\"; it has \(event.map { "\"\($0)\"" } ?? "none (or not a string)"). Use LiveActivityNotification, which writes it."
        case .liveActivityStartToChannel:
            return
                "A Live Activity start cannot go to a broadcast channel: APNs starts an activity only on a device's push-to-start token. Send the start to that token (with pushInput: .channel(channel) to subscribe it), then broadcast updates and ends."
        case let .missingLiveActivityKey(event, key):
            return
                "A Live Activity \(event) needs aps.\(key) (a start: timestamp, content-state, attributes-type, attributes and alert; an update or end: timestamp and content-state). Use LiveActivityNotification, which writes them."
        case let .invalidDate(key):
            return "The date for \(key) is before 1970 or not a finite time; APNs takes UNIX seconds."
        case let .dateInMilliseconds(key):
            return
                "The date for \(key) is past the year 5000: it was made from milliseconds. APNs takes UNIX seconds: divide by 1000 (Date(timeIntervalSince1970: Double(milliseconds) / 1000))."
        }
    }
}

extension APNsValidationError {
    /// The rule broken, as the case's name (`payloadTooLarge`): a bounded value for a metric's
    /// `apns.reason` dimension, where the description (with its values) would not be.
    var rule: String {
        switch self {
        case .payloadTooLarge: return "payloadTooLarge"
        case .payloadTooLargeAfterTruncation: return "payloadTooLargeAfterTruncation"
        case .collapseIDTooLong: return "collapseIDTooLong"
        case .emptyCollapseID: return "emptyCollapseID"
        case .controlCharacterInHeader: return "controlCharacterInHeader"
        case .invalidTopic: return "invalidTopic"
        case .invalidDeviceToken: return "invalidDeviceToken"
        case .invalidExpiration: return "invalidExpiration"
        case .reservedAppDataKey: return "reservedAppDataKey"
        case .appDataNotAnObject: return "appDataNotAnObject"
        case .nonFiniteNumber: return "nonFiniteNumber"
        case .appDataEncodingFailed: return "appDataEncodingFailed"
        case .duplicateComponent: return "duplicateComponent"
        case .mutableContentWithoutAlertText: return "mutableContentWithoutAlertText"
        case .relevanceScoreOutOfRange: return "relevanceScoreOutOfRange"
        case .negativeBadge: return "negativeBadge"
        case .criticalVolumeOutOfRange: return "criticalVolumeOutOfRange"
        case .emptyAlert: return "emptyAlert"
        case .notAnObject: return "notAnObject"
        case .invalidDate: return "invalidDate"
        case .dateInMilliseconds: return "dateInMilliseconds"
        case .invalidMDMTopic: return "invalidMDMTopic"
        case .invalidChannelID: return "invalidChannelID"
        case .collapseIDOnBroadcast: return "collapseIDOnBroadcast"
        case .expirationOnUnstoredChannel: return "expirationOnUnstoredChannel"
        case .invalidTimeout: return "invalidTimeout"
        case .invalidTransportSetting: return "invalidTransportSetting"
        case .unknownPushType: return "unknownPushType"
        case .authenticationNotAllowed: return "authenticationNotAllowed"
        case .priorityNotAllowed: return "priorityNotAllowed"
        case .expirationRequired: return "expirationRequired"
        case .notBroadcastable: return "notBroadcastable"
        case .topicNotForPushType: return "topicNotForPushType"
        case .apnsIDInBulkSend: return "apnsIDInBulkSend"
        case .invalidLiveActivityEvent: return "invalidLiveActivityEvent"
        case .liveActivityStartToChannel: return "liveActivityStartToChannel"
        case .missingLiveActivityKey: return "missingLiveActivityKey"
        case .invalidAccessoryField: return "invalidAccessoryField"
        }
    }
}
