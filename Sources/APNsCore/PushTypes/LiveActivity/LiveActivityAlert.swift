/// The alert of a Live Activity push: title and body (text or a localization key with
/// arguments) and a sound, which sits inside the alert (<doc:ProtocolReference#Live-Activities>).
///
/// Title first, then body. A literal or an interpolated string is text; a `String` you hold is
/// `.text(value)`; a key of the app's `Localizable.strings` is `.localized(key:arguments:)`.
///
/// ```swift
/// LiveActivityAlert(title: "Delivery update", body: "Your order is \(stops) stops away", sound: "chime.caf")
/// LiveActivityAlert(title: .text(order.headline), body: .text(order.status))
/// LiveActivityAlert(title: .localized(key: "%@ is knocked down!", arguments: ["Power Panda"]),
///                   body: .localized(key: "Use a potion to heal %@!", arguments: ["Power Panda"]),
///                   sound: "HeroDown.mp4")
/// ```
public struct LiveActivityAlert: Hashable, Sendable {
    /// The alert's title.
    public var title: LocalizableText
    /// The alert's body.
    public var body: LocalizableText
    /// A sound file in the app bundle, or nil for none.
    public var sound: String?

    /// An alert with a title, a body and optionally a sound.
    public init(title: LocalizableText, body: LocalizableText, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.literalKey("title")
        title.writeValue(to: &writer)
        writer.literalKey("body")
        body.writeValue(to: &writer)
        if let sound {
            writer.literalKey("sound")
            writer.string(sound)
        }
        writer.endObject()
    }
}

extension LocalizableText: ExpressibleByStringInterpolation {
    /// Text from a string literal, interpolated or not (`"\(stops) stops away"`).
    public init(stringLiteral value: String) { self = .text(value) }

    /// Text as a string; a localization as `{"loc-key":…,"loc-args":[…]}`.
    func writeValue(to writer: inout JSONWriter) {
        switch self {
        case .text(let text):
            writer.string(text)
        case .localized(let key, let arguments):
            writer.beginObject()
            writer.literalKey("loc-key")
            writer.string(key)
            if !arguments.isEmpty {
                writer.literalKey("loc-args")
                writer.beginArray()
                for argument in arguments { writer.string(argument) }
                writer.endArray()
            }
            writer.endObject()
        }
    }
}
