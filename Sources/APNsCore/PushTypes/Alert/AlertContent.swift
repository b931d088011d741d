/// The `alert` dictionary: title, subtitle, body and launch image, each plain or localized
/// (<doc:ProtocolReference#The-aps-dictionary>). Built by ``Alert``.
public struct AlertContent: Hashable, Sendable {
    /// The `title`.
    public var title: LocalizableText?
    /// The `subtitle`.
    public var subtitle: LocalizableText?
    /// The `body`.
    public var body: LocalizableText?
    /// The `launch-image` file name.
    public var launchImage: String?
    var duplicates: [String] = []

    /// Empty content; the builder's components fill it.
    public init() {}

    /// Content from the components an `Alert { }` builder collected.
    public init(_ components: [any AlertComponent]) {
        for component in components { component.apply(to: &self) }
    }

    mutating func set<Value>(_ keyPath: WritableKeyPath<AlertContent, Value?>, _ value: Value, name: String) {
        if self[keyPath: keyPath] != nil { duplicates.append(name) }
        self[keyPath: keyPath] = value
    }

    func validate() throws(APNsValidationError) {
        if let first = duplicates.first { throw .duplicateComponent(first) }
        if title == nil, subtitle == nil, body == nil, launchImage == nil { throw .emptyAlert }
    }

    /// Writes the dictionary in the order of <doc:ProtocolReference#The-aps-dictionary>: plain keys first, then the
    /// localization keys with their arguments.
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if case .text(let text)? = title { writer.literalKey("title"); writer.string(text) }
        if case .text(let text)? = subtitle { writer.literalKey("subtitle"); writer.string(text) }
        if case .text(let text)? = body { writer.literalKey("body"); writer.string(text) }
        if let launchImage { writer.literalKey("launch-image"); writer.string(launchImage) }
        title?.writeLocalized(keyName: "title-loc-key", argumentsName: "title-loc-args", to: &writer)
        subtitle?.writeLocalized(keyName: "subtitle-loc-key", argumentsName: "subtitle-loc-args", to: &writer)
        body?.writeLocalized(keyName: "loc-key", argumentsName: "loc-args", to: &writer)
        writer.endObject()
    }
}

/// Text shown as it is, or a key into the app's `Localizable.strings` with format arguments.
public enum LocalizableText: Hashable, Sendable {
    /// Text shown as it is.
    case text(String)
    /// A key of the app's `Localizable.strings` and its format arguments (`*-loc-key`, `*-loc-args`).
    case localized(key: String, arguments: [String])

    func writeLocalized(keyName: StaticString, argumentsName: StaticString, to writer: inout JSONWriter) {
        guard case .localized(let key, let arguments) = self else { return }
        writer.literalKey(keyName)
        writer.string(key)
        guard !arguments.isEmpty else { return }
        writer.literalKey(argumentsName)
        writer.beginArray()
        for argument in arguments { writer.string(argument) }
        writer.endArray()
    }
}

/// Builds the content of an ``Alert``: ``Title``, ``Subtitle``, ``Body`` and ``LaunchImage``.
@resultBuilder
public enum AlertBuilder: ComponentBuilder {
    /// What the builder collects.
    public typealias Component = any AlertComponent
}

/// A part of an alert dictionary; valid only inside `Alert { … }`.
public protocol AlertComponent: Sendable {
    /// Sets this component's key on `content`.
    func apply(to content: inout AlertContent)
}
