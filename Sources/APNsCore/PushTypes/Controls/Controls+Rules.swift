// The facts of the `controls` push type (APNs reference §3). Defined here and nowhere else.
extension PushType {
    /// `controls`: reloads Control Center controls; token only (decision, APNs reference §3).
    public static let controls = PushType(
        rawValue: "controls",
        topicSuffix: ".push-type.controls",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token]
    )
}
