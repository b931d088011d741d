// The facts of the `widgets` push type (protocol reference, Push types). Defined here and nowhere else.
extension PushType {
    /// `widgets`: reloads WidgetKit widgets; the wire name is plural; token only.
    public static let widgets = PushType(
        rawValue: "widgets",
        topicSuffix: ".push-type.widgets",
        allowedPriorities: [.immediate, .powerConsiderate],
        defaultPriority: .immediate,
        maximumPayloadSize: 4096,
        authentication: [.token]
    )
}
