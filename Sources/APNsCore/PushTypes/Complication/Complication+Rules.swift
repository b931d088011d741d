// The facts of the `complication` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `complication`: watchOS complication updates (PushKit).
    public static let complication = PushType(
        rawValue: "complication",
        topicSuffix: ".complication",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token, .certificate]
    )
}
