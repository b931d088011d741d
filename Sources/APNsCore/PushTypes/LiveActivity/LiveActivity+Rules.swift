// The facts of the `liveactivity` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `liveactivity`: starts, updates and ends Live Activities; updates and ends may also be broadcast to a
    /// channel, up to 5120 bytes (<doc:ProtocolReference#Broadcast-channels>).
    public static let liveactivity = PushType(
        rawValue: "liveactivity",
        topicSuffix: ".push-type.liveactivity",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        maximumBroadcastPayloadSize: 5120,
        authentication: [.token, .certificate]
    )
}

/// The payload rules of a Live Activity that the types guarantee for swift-apns' own
/// ``LiveActivityNotification`` and that the run-time check applies to every request, one built by
/// hand or by a push type defined elsewhere included (<doc:ProtocolReference#Live-Activities>).
enum LiveActivityRules {
    /// The keys of `aps` each event needs, beside `event` itself.
    static func requiredKeys(for event: String) -> [PayloadFacts.Keys]? {
        switch event {
        case LiveActivityEvent.Start.name: return [.timestamp, .contentState, .attributesType, .attributes, .alert]
        case LiveActivityEvent.Update.name, LiveActivityEvent.End.name: return [.timestamp, .contentState]
        default: return nil
        }
    }

    /// Throws for an event that is not start, update or end, a start to a broadcast channel, a
    /// missing required key, or a timestamp that is not integer UNIX seconds.
    static func check(_ facts: PayloadFacts, service: APNsRequest.Service) throws(APNsValidationError) {
        guard let event = facts.event, let required = requiredKeys(for: event) else {
            throw .invalidLiveActivityEvent(facts.event)
        }
        if service == .broadcast, event == LiveActivityEvent.Start.name { throw .liveActivityStartToChannel }
        for key in required where !facts.keys.contains(key) {
            throw .missingLiveActivityKey(event: event, key: key.name)
        }
        guard let timestamp = facts.timestamp, timestamp >= 0 else { throw .invalidDate(key: "timestamp") }
        guard timestamp < Int64(Expiration.millisecondsThreshold) else { throw .dateInMilliseconds(key: "timestamp") }
    }
}
