/// The alert's body: text, or a localization key with arguments (`body, loc-key, loc-args`).
///
/// ```swift
/// Alert {
///     Body("…")
///     Body(localizedKey: "GAME_PLAY_REQUEST_FORMAT", arguments: ["Shelly"])   // or, instead, a localized one
/// }
/// ```
public struct Body: AlertComponent, Hashable {
    /// The text, as sent.
    public let text: LocalizableText

    /// Text shown as it is.
    public init(_ text: String) { self.text = .text(text) }

    /// A key into the app's `Localizable.strings`, formatted on the device with `arguments`.
    public init(localizedKey key: String, arguments: [String] = []) {
        text = .localized(key: key, arguments: arguments)
    }

    /// Adds this component to the alert being built; the result builder calls it.
    public func apply(to content: inout AlertContent) { content.set(\.body, text, name: "Body") }
}
