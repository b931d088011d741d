/// A field of a ``NotificationDescription``: what a front end (the `apns` command's flags, the
/// gateway's JSON body) reads from its input and names in its own words when a rule is broken.
///
/// The raw value is the field's name in JSON, the wire format's name where APNs has one. A front
/// end reads every field through a `switch` without `default`, so a field added here fails to
/// compile until each front end reads and names it.
@_spi(Description)
public enum NotificationField: String, CaseIterable, Sendable, Comparable {
    // Every push type.
    case pushType = "push-type"
    /// The app, by bundle id: every push type but MDM.
    case bundleID = "bundle-id"
    /// The MDM topic, which takes the bundle id's place for `mdm`.
    case topic
    case priority, expiration
    case collapseID = "collapse-id"
    case apnsID = "apns-id"
    // alert (and, in part, liveactivity)
    case alert, badge, sound, category
    case threadID = "thread-id"
    case interruptionLevel = "interruption-level"
    case relevanceScore = "relevance-score"
    case contentAvailable = "content-available"
    case mutableContent = "mutable-content"
    case targetContentID = "target-content-id"
    case filterCriteria = "filter-criteria"
    /// App data, written beside `aps`.
    case appData = "data"
    // fileprovider
    case containerIdentifier = "container-identifier"
    case domain
    // accessory
    case encryptedData = "encrypted-data"
    case sessionIdentifier = "session-identifier"
    case keyID = "key-id"
    case messageIndex = "message-index"
    // mdm
    case pushMagic = "push-magic"
    // liveactivity
    case event
    case contentState = "content-state"
    case timestamp
    case dismissalDate = "dismissal-date"
    case staleDate = "stale-date"
    case attributesType = "attributes-type"
    case attributes
    case inputPushToken = "input-push-token"
    case inputPushChannel = "input-push-channel"

    /// The fields a notification of `pushType` takes; any other given is refused by name.
    public static func fields(of pushType: PushType.Name) -> Set<NotificationField> {
        let common: Set<NotificationField> = [
            .pushType, pushType == .mdm ? .topic : .bundleID, .priority, .expiration, .collapseID, .apnsID,
        ]
        switch pushType {
        case .alert:
            return common.union([
                .alert, .badge, .sound, .threadID, .category, .interruptionLevel, .relevanceScore, .contentAvailable,
                .mutableContent, .targetContentID, .filterCriteria, .appData,
            ])
        case .background, .voip, .complication, .pushtotalk: return common.union([.appData])
        case .widgets, .controls, .location: return common
        case .fileprovider: return common.union([.containerIdentifier, .domain])
        case .accessory: return common.union([.encryptedData, .sessionIdentifier, .keyID, .messageIndex])
        case .mdm: return common.union([.pushMagic])
        case .liveactivity:
            return common.union([
                .event, .contentState, .timestamp, .dismissalDate, .staleDate, .relevanceScore, .alert, .sound,
                .attributesType, .attributes, .inputPushToken, .inputPushChannel,
            ])
        }
    }

    /// The push types that take this field, for a message that says where a misplaced field belongs.
    public var pushTypes: [PushType.Name] {
        PushType.Name.allCases.filter { NotificationField.fields(of: $0).contains(self) }
    }

    /// The field of an ``AccessoryNotification`` member that
    /// ``APNsValidationError/invalidAccessoryField(_:)`` names.
    public init?(accessoryMember name: String) {
        switch name {
        case "encryptedData": self = .encryptedData
        case "sessionIdentifier": self = .sessionIdentifier
        case "keyID": self = .keyID
        case "messageIndex": self = .messageIndex
        default: return nil
        }
    }

    public static func < (lhs: NotificationField, rhs: NotificationField) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension PushType {
    /// The push types as an enum, for code that must handle each one: a `switch` over it without
    /// `default` fails to compile when a push type is added. ``PushType/allCases`` is made from it,
    /// so a push type that is not a case here is not a push type at all.
    @_spi(Description)
    public enum Name: String, CaseIterable, Sendable {
        case accessory, alert, background, complication, controls, fileprovider, liveactivity, location, mdm
        case pushtotalk, voip, widgets

        /// The push type and its facts.
        public var pushType: PushType {
            switch self {
            case .accessory: .accessory
            case .alert: .alert
            case .background: .background
            case .complication: .complication
            case .controls: .controls
            case .fileprovider: .fileprovider
            case .liveactivity: .liveactivity
            case .location: .location
            case .mdm: .mdm
            case .pushtotalk: .pushtotalk
            case .voip: .voip
            case .widgets: .widgets
            }
        }
    }
}
