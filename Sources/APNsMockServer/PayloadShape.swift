@_spi(Description) import APNs
import Foundation

/// The payload shape each push type must have (protocol reference, Push types to Live Activities), checked on parsed JSON.
enum PayloadShape {
    /// Keys `aps` may hold in an alert (protocol reference, The aps dictionary).
    static let alertKeys: Set<String> = [
        "alert", "badge", "sound", "thread-id", "category", "content-available", "mutable-content",
        "target-content-id", "interruption-level", "relevance-score", "filter-criteria",
    ]
    static let liveActivityKeys: Set<String> = [
        "alert", "timestamp", "event", "content-state", "stale-date", "dismissal-date", "relevance-score",
        "attributes-type", "attributes", "input-push-token", "input-push-channel",
    ]

    /// An accessory's response (protocol reference, Push types): every value a string.
    static let accessoryKeys: Set<String> = ["encryptedData", "sessionIdentifier", "keyID", "messageIndex"]

    /// Every key APNs reads inside `aps`; APNs ignores any other (protocol reference, The aps dictionary).
    static let knownKeys: Set<String> = alertKeys.union(liveActivityKeys).union(accessoryKeys).union(["content-changed"]
    )

    /// `broadcast`: the payload goes to a channel, where only update and end are allowed.
    /// `strict`: unknown keys inside `aps` are refused instead of ignored as APNs does.
    static func isValid(
        _ json: [String: Any], for pushType: PushType, broadcast: Bool = false, strict: Bool = false
    ) -> Bool {
        var aps = json["aps"] as? [String: Any]
        if !strict, let all = aps { aps = all.filter { knownKeys.contains($0.key) } }
        guard let name = PushType.Name(rawValue: pushType.rawValue) else { return false }
        switch name {  // no default: a push type added to the library fails to compile here
        case .alert:
            guard let aps, Set(aps.keys).isSubset(of: alertKeys) else { return false }
            if let badge = aps["badge"] {
                guard let number = badge as? NSNumber, number.intValue >= 0 else { return false }
            }
            return true
        case .background:
            guard let aps, aps.count == 1, (aps["content-available"] as? NSNumber)?.intValue == 1 else { return false }
            return true
        case .widgets, .controls:
            guard let aps, aps.count == 1, aps["content-changed"] as? Bool == true else { return false }
            return json.count == 1
        case .location:
            return aps?.isEmpty == true && json.count == 1
        case .accessory:
            guard let aps, Set(aps.keys) == accessoryKeys, json.count == 1,
                let encrypted = aps["encryptedData"] as? String, BroadcastChannel.isBase64(encrypted),
                let key = aps["keyID"] as? String, BroadcastChannel.isBase64(key),
                let session = aps["sessionIdentifier"] as? String, !session.isEmpty,
                let index = aps["messageIndex"] as? String, UInt64(index) != nil
            else { return false }
            return true
        case .mdm:
            return json.count == 1 && json["mdm"] is String
        case .fileprovider:
            return json["aps"] == nil && json["container-identifier"] is String && json["domain"] is String
        case .pushtotalk:
            return json["aps"] == nil
        case .liveactivity:
            guard let aps, Set(aps.keys).isSubset(of: liveActivityKeys),
                let event = aps["event"] as? String, ["start", "update", "end"].contains(event),
                aps["timestamp"] is NSNumber, aps["content-state"] is [String: Any]
            else { return false }
            if broadcast && event == "start" { return false }
            if event == "start" {
                guard aps["attributes-type"] is String, aps["attributes"] is [String: Any], aps["alert"] != nil else {
                    return false
                }
                if aps["input-push-token"] != nil && aps["input-push-channel"] != nil { return false }
            }
            if event != "end" && aps["dismissal-date"] != nil { return false }
            return true
        case .complication, .voip:  // free-form JSON objects
            return true
        }
    }
}
