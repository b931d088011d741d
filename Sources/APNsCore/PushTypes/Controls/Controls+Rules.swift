// The facts of the `controls` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `controls`: reloads Control Center controls; token only (decision, <doc:ProtocolReference#Push-types>).
    public static let controls = PushType(
        rawValue: "controls",
        topicSuffix: ".push-type.controls",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token]
    )
}
