/// The alert's title: text, or a localization key with arguments (`title, title-loc-key, title-loc-args`).
///
/// ```swift
/// Alert {
///     Title("…")
///     Title(localizedKey: "GAME_TITLE", arguments: ["Shelly"])   // or, instead, a localized one
/// }
/// ```
public struct Title: AlertComponent, Hashable {
    /// The text, as sent.
    public let text: LocalizableText

    /// Text shown as it is.
    public init(_ text: String) { self.text = .text(text) }

    /// A key into the app's `Localizable.strings`, formatted on the device with `arguments`.
    public init(localizedKey key: String, arguments: [String] = []) {
        text = .localized(key: key, arguments: arguments)
    }

    /// Adds this component to the alert being built; the result builder calls it.
    public func apply(to content: inout AlertContent) { content.set(\.title, text, name: "Title") }
}
