// The facts of the `mdm` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `mdm`: tells a managed device to contact its MDM server; the topic is the push certificate UID; certificate only.
    public static let mdm = PushType(
        rawValue: "mdm",
        topicSuffix: nil,
        topicPrefix: "com.apple.mgmt.",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.certificate]
    )
}
