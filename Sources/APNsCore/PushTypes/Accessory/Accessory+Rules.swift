// The facts of the `accessory` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `accessory`: carries an accessory's encrypted response to a forwarded notification back to
    /// the iPhone (Accessory Notifications, iOS 26.5).
    public static let accessory = PushType(
        rawValue: "accessory",
        topicSuffix: ".push-type.accessory",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token, .certificate]
    )
}
