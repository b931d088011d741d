extension LiveActivityNotification {
    /// A copy whose alert text is shortened so the payload fits: the body first, then the title,
    /// each cut at a character boundary with `ellipsis` appended (see
    /// ``PushNotification/truncatedToFit(_:limit:ellipsis:)``). Localized text is not cut; an event
    /// without an alert is returned as it is, or fails if it is too large.
    ///
    /// ```swift
    /// let fitted = try update.truncatedToFit(limit: PushType.liveactivity.maximumBroadcastPayloadSize)
    /// ```
    /// - Parameters:
    ///   - limit: 4096 bytes by default; pass the broadcast limit (5120) for a channel.
    ///   - ellipsis: Appended where text is cut.
    /// - Throws: ``APNsError/validation(_:)`` when the payload is too large with its alert cut,
    ///   or breaks another rule.
    public func truncatedToFit(limit: Int? = nil, ellipsis: String = "…") throws(APNsError) -> Truncated<Self> {
        try truncatedToFit(
            [alertField("body", \.body), alertField("title", \.title)], limit: limit, ellipsis: ellipsis)
    }

    private func alertField(
        _ name: String, _ keyPath: WritableKeyPath<LiveActivityAlert, LocalizableText> & Sendable
    ) -> TruncatableText<Self> {
        TruncatableText(
            name,
            read: { notification in
                guard case .text(let text)? = notification.storedAlert?[keyPath: keyPath] else { return nil }
                return text
            },
            write: { notification, text in notification.storedAlert?[keyPath: keyPath] = .text(text) })
    }
}
