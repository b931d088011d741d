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
