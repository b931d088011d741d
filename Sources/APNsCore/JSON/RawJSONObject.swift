#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// App data given as JSON text (from a command line, a queue, a template), written beside `aps`
/// in its own key order with insignificant whitespace removed.
///
/// ```swift
/// let data = try RawJSONObject(#"{ "gameID": "12345678", "round": 2 }"#)
/// let notification = AlertNotification(bundleID: "com.example.app", appData: data) { Alert("Your turn") }
/// // {"aps":{"alert":"Your turn"},"gameID":"12345678","round":2}
/// ```
public struct RawJSONObject: Encodable, Sendable, Hashable {
    /// The compact text, `{…}`.
    public let compactText: String

    /// App data from JSON text, which must be one object without a root `aps` key.
    ///
    /// - Throws: ``APNsError/validation(_:)``: ``APNsValidationError/appDataNotAnObject`` unless
    ///   `text` is one JSON object, ``APNsValidationError/reservedAppDataKey(_:)`` if it has a root
    ///   `aps` key.
    public init(_ text: String) throws(APNsError) {
        do { self = try RawJSONObject(validating: text) } catch { throw .validation(error) }
    }

    /// ``init(_:)`` for code that throws validation errors only.
    package init(validating text: String) throws(APNsValidationError) {
        guard let root = try? JSONDecoder().decode(RootKeys.self, from: Data(text.utf8)) else {
            throw .appDataNotAnObject
        }
        if root.keys.contains("aps") { throw .reservedAppDataKey("aps") }
        compactText = RawJSONObject.compact(text)
    }

    /// `{}`: an object with no keys.
    static let empty = RawJSONObject(compact: "{}")

    private init(compact text: String) { compactText = text }

    /// Decodes any JSON object, keeping its root keys; anything else fails to decode.
    private struct RootKeys: Decodable {
        var keys: [String]
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        struct AnyValue: Decodable {
            init(from decoder: Decoder) throws {
                if let object = try? decoder.container(keyedBy: Key.self) {
                    for key in object.allKeys { _ = try object.decode(AnyValue.self, forKey: key) }
                } else if var array = try? decoder.unkeyedContainer() {
                    while !array.isAtEnd { _ = try array.decode(AnyValue.self) }
                } else {
                    let single = try decoder.singleValueContainer()
                    if single.decodeNil() { return }
                    if (try? single.decode(Bool.self)) != nil { return }
                    if (try? single.decode(Double.self)) != nil { return }
                    _ = try single.decode(String.self)
                }
            }
        }
        init(from decoder: Decoder) throws {
            let object = try decoder.container(keyedBy: Key.self)
            keys = object.allKeys.map(\.stringValue)
            for key in object.allKeys { _ = try object.decode(AnyValue.self, forKey: key) }
        }
    }

    /// Removes whitespace outside strings.
    static func compact(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        var inString = false
        var escaped = false
        for byte in text.utf8 {
            if inString {
                out.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
                out.append(byte)
            } else if ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The members between the braces, `"a":1,"b":2`, or "" for `{}`.
    var members: Substring { compactText.dropFirst().dropLast() }

    /// swift-apns' app-data encoder writes the object itself wherever it is nested; encoding
    /// through any other encoder (`JSONEncoder`) writes the text as a string.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(compactText)
    }
}

extension JSONWriter {
    /// Splices the members of a raw object into the object being written.
    mutating func rawMembers(_ members: Substring) {
        guard !members.isEmpty else { return }
        rawMembersText(members)
    }
}
