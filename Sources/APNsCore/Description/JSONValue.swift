#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Any JSON value, as a front end's body carries it (the gateway's requests, the mock console's
/// composer): read field by field so that unknown and misplaced fields are reported by name, and
/// written back compactly with sorted keys (for app data, content state and the stored request).
///
/// Thread safety: a value type; `Sendable`.
@_spi(Description)
public enum JSONValue: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Each kind is tried in turn, and each miss throws (a `DecodingError` with its coding path).
    /// Strings come first, since nearly every value of a request is one (a device token each), and
    /// a miss is a thrown error: tried after booleans and numbers, each token cost three misses.
    /// A JSON string decodes as nothing but a `String`, and nothing else
    /// decodes as one, so the order changes no value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The compact JSON text, object keys sorted, written by the library's `JSONWriter` (so app
    /// data and content state follow the same escaping and number rules as every payload).
    public var compactText: String {
        var writer = JSONWriter(capacity: 256)
        write(into: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private func write(into writer: inout JSONWriter) {
        switch self {
        case .null: writer.null()
        case .bool(let value): writer.bool(value)
        case .integer(let value): writer.int(value)
        case .number(let value): writer.double(value)
        case .string(let value): writer.string(value)
        case .array(let values):
            writer.beginArray()
            for value in values { value.write(into: &writer) }
            writer.endArray()
        case .object(let members):
            writer.beginObject()
            for key in members.keys.sorted() {
                writer.key(key)
                members[key]?.write(into: &writer)
            }
            writer.endObject()
        }
    }

    /// A JSON type name for messages: "a string", "an object", ….
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
