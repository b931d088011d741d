/// Groups notifications so the device shows only the newest (`apns-collapse-id`, <doc:ProtocolReference#Device-requests>).
///
/// At most 64 bytes of UTF-8. Checked when the request is built, so a literal can be written
/// directly:
///
/// ```swift
/// let notification = AlertNotification(bundleID: "com.example.app", collapseID: "score-42") {
///     Alert("3 – 2")
/// }
/// ```
public struct CollapseID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The largest collapse id APNs accepts, in UTF-8 bytes.
    public static let maximumLength = 64

    /// The text, as sent.
    public let value: String

    /// A collapse id; checked when the request is built.
    public init(_ value: String) { self.value = value }
    /// A value from a string literal.
    public init(stringLiteral value: String) { self.value = value }

    /// Checks the rules of <doc:ProtocolReference#Device-requests>: 1 to 64 bytes, no control characters (they could not
    /// travel in an HTTP header).
    public func validate() throws(APNsValidationError) {
        let length = value.utf8.count
        guard length > 0 else { throw .emptyCollapseID }
        guard length <= CollapseID.maximumLength else {
            throw .collapseIDTooLong(bytes: length, limit: CollapseID.maximumLength)
        }
        guard !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw .controlCharacterInHeader(header: APNsRequest.Header.Name.apnsCollapseID.rawValue)
        }
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { value }
}
