/// The alert's subtitle: text, or a localization key with arguments (`subtitle, subtitle-loc-key, subtitle-loc-args`).
///
/// ```swift
/// Alert {
///     Subtitle("…")
///     Subtitle(localizedKey: "GAME_SUBTITLE", arguments: ["Shelly"])   // or, instead, a localized one
/// }
/// ```
public struct Subtitle: AlertComponent, Hashable {
    public let text: LocalizableText

    /// Text shown as it is.
    public init(_ text: String) { self.text = .text(text) }

    /// A key into the app's `Localizable.strings`, formatted on the device with `arguments`.
    public init(localizedKey key: String, arguments: [String] = []) {
        text = .localized(key: key, arguments: arguments)
    }

    public func apply(to content: inout AlertContent) { content.set(\.subtitle, text, name: "Subtitle") }
}
