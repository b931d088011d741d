// The facts of the `alert` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `alert`: alerts, sounds and badges shown to the user.
    public static let alert = PushType(
        rawValue: "alert",
        topicSuffix: "",
        allowedPriorities: [.immediate, .powerConsiderate, .low],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token, .certificate]
    )
}
