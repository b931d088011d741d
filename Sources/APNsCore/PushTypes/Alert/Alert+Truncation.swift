extension AlertNotification {
    /// A copy whose alert text is shortened so the payload fits 4096 bytes: the body first, then
    /// the subtitle, then the title (a plain-string alert is its body), each cut at a character
    /// boundary with `ellipsis` appended. Opt-in: ``PushNotification/request(to:)`` never
    /// truncates, and an oversize payload stays
    /// ``APNsValidationError/payloadTooLarge(pushType:size:limit:)``. Localized text
    /// (`loc-key`) is not cut.
    ///
    /// ```swift
    /// let fitted = try AlertNotification(bundleID: "com.example.app") {
    ///     Alert { Title(article.title); Body(article.text) }
    /// }.truncatedToFit()
    /// if fitted.wasTruncated { logger.info("shortened: \(fitted.cuts)") }   // body: removed 1210 characters (3650 bytes)
    /// try await send(fitted.notification, via: connector, to: device)
    /// ```
    /// - Throws: ``APNsError/validation(_:)``:
    ///   ``APNsValidationError/payloadTooLargeAfterTruncation(pushType:size:limit:fields:)`` when
    ///   the rest of the payload is too large on its own; any other rule the payload breaks.
    public func truncatedToFit(ellipsis: String = "…") throws(APNsError) -> Truncated<Self> {
        try truncatedToFit(Self.alertTextFields, ellipsis: ellipsis)
    }

    /// Body (or a plain-string alert), subtitle, title: the order alert text is shortened in.
    static var alertTextFields: [TruncatableText<Self>] {
        [
            TruncatableText(
                "alert", read: { if case .text(let text)? = $0.payload.alert { return text } else { return nil } },
                write: { $0.payload.alert = .text($1) }),
            contentField("body", \.body),
            contentField("subtitle", \.subtitle),
            contentField("title", \.title),
        ]
    }

    private static func contentField(
        _ name: String, _ keyPath: WritableKeyPath<AlertContent, LocalizableText?> & Sendable
    ) -> TruncatableText<Self> {
        TruncatableText(
            name,
            read: { notification in
                guard case .content(let content)? = notification.payload.alert,
                    case .text(let text)? = content[keyPath: keyPath]
                else { return nil }
                return text
            },
            write: { notification, text in
                guard case .content(var content)? = notification.payload.alert else { return }
                content[keyPath: keyPath] = .text(text)
                notification.payload.alert = .content(content)
            })
    }
}
