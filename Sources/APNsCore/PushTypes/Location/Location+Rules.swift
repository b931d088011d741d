// The facts of the `location` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `location`: asks a Location Push Service Extension for the location; token only.
    public static let location = PushType(
        rawValue: "location",
        topicSuffix: ".location-query",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token]
    )
}
