// The facts of the `fileprovider` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `fileprovider`: signals a File Provider extension; token only.
    public static let fileprovider = PushType(
        rawValue: "fileprovider",
        topicSuffix: ".pushkit.fileprovider",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token]
    )
}
