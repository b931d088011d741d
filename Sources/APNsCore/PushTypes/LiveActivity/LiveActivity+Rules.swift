// The facts of the `liveactivity` push type (APNs reference §3). Defined here and nowhere else.
extension PushType {
    /// `liveactivity`: starts, updates and ends Live Activities.
    public static let liveactivity = PushType(
        rawValue: "liveactivity",
        topicSuffix: ".push-type.liveactivity",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token, .certificate]
    )
}
