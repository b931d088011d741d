/// A text field that ``PushNotification/truncatedToFit(_:limit:ellipsis:)`` may shorten: a name
/// for the report and where the text lives in the notification.
///
/// ```swift
/// struct Call: Encodable, Sendable { var callerName: String; var callID: String }
/// let fitted = try voip.truncatedToFit([TruncatableText("callerName", \.appData.callerName)])
/// ```
///
/// Thread safety: an immutable value; use it from one task at a time (key paths need not be
/// `Sendable`).
public struct TruncatableText<Root> {
    /// The name the report (``TextCut/field``) gives the field.
    public let name: String
    let read: (Root) -> String?
    let write: (inout Root, String) -> Void

    /// A `String` field.
    public init(_ name: String, _ keyPath: WritableKeyPath<Root, String>) {
        self.name = name
        read = { $0[keyPath: keyPath] }
        write = { $0[keyPath: keyPath] = $1 }
    }

    /// An optional `String` field; nil is left alone.
    public init(_ name: String, _ keyPath: WritableKeyPath<Root, String?>) {
        self.name = name
        read = { $0[keyPath: keyPath] }
        write = { $0[keyPath: keyPath] = $1 }
    }

    /// A field read and written by closures (for text inside an enum, such as ``LocalizableText``).
    init(_ name: String, read: @escaping (Root) -> String?, write: @escaping (inout Root, String) -> Void) {
        self.name = name
        self.read = read
        self.write = write
    }
}

/// What truncation cut from one text field.
public struct TextCut: Hashable, Sendable, CustomStringConvertible {
    /// The field: `body`, `subtitle`, `title`, `alert` (a plain-string alert) or the name given to
    /// ``TruncatableText``.
    public let field: String
    /// The text as it is now, ending with the ellipsis (or empty, when even the ellipsis did not
    /// fit in what the field had).
    public let text: String
    /// How many characters (grapheme clusters, as users see them) were removed.
    public let removedCharacters: Int
    /// How many bytes the payload shrank by because of this field (escapes counted as sent).
    public let removedBytes: Int

    /// A report of one cut; for comparing in tests.
    public init(field: String, text: String, removedCharacters: Int, removedBytes: Int) {
        self.field = field
        self.text = text
        self.removedCharacters = removedCharacters
        self.removedBytes = removedBytes
    }

    /// `body: removed 120 characters (130 bytes)`.
    public var description: String { "\(field): removed \(removedCharacters) characters (\(removedBytes) bytes)" }
}

/// A notification that fits its payload limit, and what was cut to make it fit.
///
/// Thread safety: a value, `Sendable` as its notification is.
public struct Truncated<Notification: PushNotification>: Sendable {
    /// The notification to send: unchanged when it already fit.
    public let notification: Notification
    /// What was cut, in the order fields were shortened; empty when nothing was.
    public let cuts: [TextCut]
    /// The payload's size before, in bytes.
    public let originalSize: Int
    /// The payload's size now, in bytes: at most ``limit``.
    public let size: Int
    /// The limit it was fitted to.
    public let limit: Int
    /// Whether any text was cut.
    public var wasTruncated: Bool { !cuts.isEmpty }
}

extension PushNotification {
    /// A copy whose `fields` are shortened, in order, until the encoded payload fits `limit`: each
    /// is cut at a character (grapheme cluster) boundary — never inside a JSON escape or a UTF-8
    /// sequence — trailing whitespace dropped and `ellipsis` appended, keeping as much text as
    /// fits. Fields after the one that made it fit are untouched. Nothing is cut when the payload
    /// already fits.
    ///
    /// ```swift
    /// struct Call: Encodable, Sendable { var callerName: String; var callID: String }
    /// let call = VoIPNotification(bundleID: "com.example.app", appData: Call(callerName: name, callID: id))
    /// let fitted = try call.truncatedToFit([TruncatableText("callerName", \.appData.callerName)])
    /// try await send(fitted.notification, via: connector, to: device)
    /// ```
    ///
    /// ``AlertNotification/truncatedToFit(ellipsis:)`` and
    /// ``LiveActivityNotification/truncatedToFit(limit:ellipsis:)`` pick the alert's fields.
    /// - Parameters:
    ///   - fields: The texts that may be shortened, first shortened first.
    ///   - limit: The payload limit; the push type's (4096 bytes, 5120 for VoIP) by default.
    ///   - ellipsis: Appended to shortened text; `…` (U+2026, 3 bytes) by default.
    /// - Throws: ``APNsError/validation(_:)``:
    ///   ``APNsValidationError/payloadTooLargeAfterTruncation(pushType:size:limit:fields:)`` when
    ///   the payload is still too large with every field cut, and whatever building the payload
    ///   throws.
    public func truncatedToFit(
        _ fields: [TruncatableText<Self>], limit: Int? = nil, ellipsis: String = "…"
    ) throws(APNsError) -> Truncated<Self> {
        do { return try validatedTruncation(fields, limit: limit, ellipsis: ellipsis) } catch {
            throw .validation(error)
        }
    }

    /// ``truncatedToFit(_:limit:ellipsis:)`` for code that throws validation errors only.
    package func validatedTruncation(
        _ fields: [TruncatableText<Self>], limit: Int? = nil, ellipsis: String = "…"
    ) throws(APNsValidationError) -> Truncated<Self> {
        let limit = limit ?? Self.pushType.maximumPayloadSize
        let originalSize = try encodedSize()
        var notification = self
        var size = originalSize
        var cuts: [TextCut] = []
        let ellipsisWidth = JSONWriter.escapedCount(ellipsis.utf8)
        for field in fields where size > limit {
            guard let text = field.read(notification), !text.isEmpty else { continue }
            let widths = text.map { JSONWriter.escapedCount($0.utf8) }
            let width = widths.reduce(0, +)
            // Keep the longest prefix whose width, with the ellipsis, frees `size - limit` bytes.
            let budget = width - (size - limit) - ellipsisWidth
            var kept = 0
            var used = 0
            for characterWidth in widths {
                guard used + characterWidth <= budget else { break }
                used += characterWidth
                kept += 1
            }
            var prefix = Substring(text.prefix(kept))
            while let last = prefix.last, last.isWhitespace { prefix.removeLast() }
            let shortened = ellipsisWidth < width ? prefix + ellipsis : ""
            field.write(&notification, shortened)
            let newSize = try notification.encodedSize()
            cuts.append(
                TextCut(
                    field: field.name, text: shortened, removedCharacters: text.count - prefix.count,
                    removedBytes: size - newSize))
            size = newSize
        }
        guard size <= limit else {
            throw .payloadTooLargeAfterTruncation(
                pushType: Self.pushType, size: size, limit: limit, fields: fields.map(\.name))
        }
        return Truncated(notification: notification, cuts: cuts, originalSize: originalSize, size: size, limit: limit)
    }

    /// The payload's size in bytes, however large.
    func encodedSize() throws(APNsValidationError) -> Int {
        var writer = JSONWriter()
        try writePayload(to: &writer)
        return writer.count
    }
}
