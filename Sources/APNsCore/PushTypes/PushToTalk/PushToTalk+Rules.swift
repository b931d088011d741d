// The facts of the `pushtotalk` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `pushtotalk`: Push to Talk; priority 10 and expiration 0 only.
    public static let pushtotalk = PushType(
        rawValue: "pushtotalk",
        topicSuffix: ".voip-ptt",
        allowedPriorities: [.immediate],
        defaultPriority: .immediate,
        requiredExpiration: 0,
        maximumPayloadSize: 4096,
        authentication: [.token, .certificate]
    )
}
