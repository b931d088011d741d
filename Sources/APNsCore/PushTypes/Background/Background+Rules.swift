// The facts of the `background` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `background`: wakes the app silently (`content-available`); priority 5 only.
    public static let background = PushType(
        rawValue: "background",
        topicSuffix: "",
        allowedPriorities: [.powerConsiderate],
        defaultPriority: .powerConsiderate,
        maximumPayloadSize: 4096,
        authentication: [.token, .certificate]
    )
}
