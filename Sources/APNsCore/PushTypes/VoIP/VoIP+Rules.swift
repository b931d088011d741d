// The facts of the `voip` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `voip`: incoming VoIP calls (PushKit); 5120 bytes.
    public static let voip = PushType(
        rawValue: "voip",
        topicSuffix: ".voip",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 5120,
        authentication: [.token, .certificate]
    )
}
