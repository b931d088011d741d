#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Encodes app data (any `Encodable`) into JSON with `JSONEncoder`'s default strategies, but in the
/// order `encode(to:)` writes the keys, so the bytes are the same on every run and every platform.
///
/// - `Date`: seconds since 2001-01-01 as a number (`.deferredToDate`).
/// - `Data`: a base64 string (`.base64`). `URL`: its absolute string. `Decimal`: a JSON number.
/// - ``RawJSONObject``: its JSON, as it is (not as a string, which is what `JSONEncoder` writes).
/// - `nil` optionals written with `encodeIfPresent` are omitted; explicit `encodeNil` writes `null`.
/// - Non-finite floating-point values throw (`.throw`).
/// - `Dictionary` has no stable iteration order, so its keys are written sorted by their UTF-8 bytes;
///   this is the one place the output order is not the `encode(to:)` order.
struct AppDataEncoder {
    enum Failure: Error {
        case nonFinite(path: String)
        case reserved(String)
        case other(String)
    }

    /// Encodes `value`, an object, straight into `writer`'s current object as `"key":value` members.
    /// Returns the root keys written, or nil (writing nothing) when `value` is not an object.
    static func writeMembers<T: Encodable>(
        of value: T, into writer: inout JSONWriter, reservedKeys: Set<String>, options: AppDataEncoding = .default
    ) throws(Failure) -> Bool {
        let encoder = TreeEncoder(codingPath: [], options: options)
        do {
            try encoder.wrapTopLevel(value)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .other(String(describing: error))
        }
        var slot = encoder.slot
        while case .encoder(let inner)? = slot { slot = inner.slot }
        if case .value(.object(let entries))? = slot {  // a value that encoded nothing
            if let reserved = entries.first(where: { reservedKeys.contains($0.key) }) { throw .reserved(reserved.key) }
            for entry in entries {
                writer.key(entry.key)
                entry.value.write(to: &writer)
            }
            return true
        }
        guard case .object(let box)? = slot ?? .object(ObjectBox()) else { return false }
        if let reserved = box.keys.first(where: { reservedKeys.contains($0) }) { throw .reserved(reserved) }
        let order =
            box.sortKeys
            ? box.keys.indices.sorted { box.keys[$0].utf8.lexicographicallyPrecedes(box.keys[$1].utf8) }
            : Array(box.keys.indices)
        for index in order {
            writer.key(box.keys[index])
            box.values[index].write(to: &writer)
        }
        return true
    }

    /// Encodes `value` and returns its tree.
    static func encode<T: Encodable>(_ value: T, options: AppDataEncoding = .default) throws(Failure) -> Node {
        let encoder = TreeEncoder(codingPath: [], options: options)
        do {
            try encoder.wrapTopLevel(value)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .other(String(describing: error))
        }
        return encoder.resolve()
    }

    /// A finished JSON value.
    indirect enum Node: Equatable {
        case null
        case bool(Bool)
        case number(String)
        /// Compact JSON written as it is: a ``RawJSONObject`` nested in app data.
        case rawJSON(String)
        case string(String)
        case array([Node])
        case object([(key: String, value: Node)])

        static func == (lhs: Node, rhs: Node) -> Bool {
            switch (lhs, rhs) {
            case (.null, .null): return true
            case let (.bool(a), .bool(b)): return a == b
            case let (.number(a), .number(b)): return a == b
            case let (.rawJSON(a), .rawJSON(b)): return a == b
            case let (.string(a), .string(b)): return a == b
            case let (.array(a), .array(b)): return a == b
            case let (.object(a), .object(b)):
                return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
            default: return false
            }
        }

        func write(to writer: inout JSONWriter) {
            switch self {
            case .null: writer.null()
            case .bool(let value): writer.bool(value)
            case .number(let literal): writer.numberLiteral(literal)
            case .rawJSON(let text): writer.rawValue(text)
            case .string(let value): writer.string(value)
            case .array(let items):
                writer.beginArray()
                for item in items { item.write(to: &writer) }
                writer.endArray()
            case .object(let entries):
                writer.beginObject()
                for entry in entries {
                    writer.key(entry.key)
                    entry.value.write(to: &writer)
                }
                writer.endObject()
            }
        }
    }
}

/// Marks `Dictionary` so the encoder can sort its keys.
protocol UnorderedDictionaryMarker {}
extension Dictionary: UnorderedDictionaryMarker {}

// MARK: - The tree being built

/// A slot in the tree while encoding: containers are references so that nested containers handed
/// out before their contents are written still end up in the right place.
private enum Slot {
    case value(AppDataEncoder.Node)
    case array(ArrayBox)
    case object(ObjectBox)
    case encoder(TreeEncoder)

    func resolve() -> AppDataEncoder.Node {
        switch self {
        case .value(let node): return node
        case .array(let box): return .array(box.items.map { $0.resolve() })
        case .object(let box):
            var entries = zip(box.keys, box.values).map { (key: $0.0, value: $0.1.resolve()) }
            if box.sortKeys { entries.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } }
            return .object(entries)
        case .encoder(let encoder): return encoder.resolve()
        }
    }

    /// Writes the value without building a ``AppDataEncoder/Node`` tree first.
    func write(to writer: inout JSONWriter) {
        switch self {
        case .value(let node): node.write(to: &writer)
        case .array(let box):
            writer.beginArray()
            for item in box.items { item.write(to: &writer) }
            writer.endArray()
        case .object(let box):
            writer.beginObject()
            if box.sortKeys {
                let order = box.keys.indices.sorted { box.keys[$0].utf8.lexicographicallyPrecedes(box.keys[$1].utf8) }
                for index in order {
                    writer.key(box.keys[index])
                    box.values[index].write(to: &writer)
                }
            } else {
                for index in box.keys.indices {
                    writer.key(box.keys[index])
                    box.values[index].write(to: &writer)
                }
            }
            writer.endObject()
        case .encoder(let encoder):
            if let slot = encoder.slot { slot.write(to: &writer) } else { writer.beginObject(); writer.endObject() }
        }
    }
}

private final class ArrayBox {
    var items: [Slot] = []
}

/// An object's entries in insertion order. A key written twice keeps its first place and its last
/// value, as with `JSONEncoder`. Objects are small, so a linear search beats hashing.
private final class ObjectBox {
    var keys: [String] = []
    var values: [Slot] = []
    var sortKeys = false

    func set(_ slot: Slot, for key: String) {
        if let index = keys.firstIndex(of: key) {
            values[index] = slot
        } else {
            keys.append(key)
            values.append(slot)
        }
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { "Index \(intValue ?? 0)" }
    var intValue: Int?
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) {}
    init?(intValue: Int) { nil }
}

private func pathDescription(_ path: [CodingKey]) -> String {
    path.isEmpty ? "<root>" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
}

// MARK: - Encoder

private final class TreeEncoder: Encoder {
    let codingPath: [CodingKey]
    let options: AppDataEncoding
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var slot: Slot?

    init(codingPath: [CodingKey], options: AppDataEncoding) {
        self.codingPath = codingPath
        self.options = options
    }

    /// The key as the key strategy writes it.
    func name(of key: some CodingKey) -> String { options.name(of: key.stringValue) }

    func resolve() -> AppDataEncoder.Node { slot?.resolve() ?? .object([]) }

    func wrapTopLevel<T: Encodable>(_ value: T) throws {
        slot = try wrap(value, at: codingPath)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: ObjectBox
        if case .object(let existing) = slot {
            box = existing
        } else {
            box = ObjectBox()
            slot = .object(box)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, encoder: self, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        let box: ArrayBox
        if case .array(let existing) = slot {
            box = existing
        } else {
            box = ArrayBox()
            slot = .array(box)
        }
        return UnkeyedContainer(box: box, encoder: self, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer {
        SingleContainer(encoder: self, codingPath: codingPath)
    }

    // MARK: Values

    func wrap<T: Encodable>(_ value: T, at path: [CodingKey]) throws -> Slot {
        // Exact type checks (a metadata comparison) rather than `as?` casts, which are costly and
        // would run for every nested value.
        if T.self == String.self, let string = value as? String { return .value(.string(string)) }
        if T.self == Int.self, let int = value as? Int { return .value(.number(String(int))) }
        if T.self == Double.self, let double = value as? Double { return .value(try number(double, at: path)) }
        if T.self == Bool.self, let bool = value as? Bool { return .value(.bool(bool)) }
        if T.self == Date.self, let date = value as? Date {
            switch options.dates {
            case .deferredToDate: return .value(try number(date.timeIntervalSinceReferenceDate, at: path))
            case .secondsSince1970: return .value(try number(date.timeIntervalSince1970, at: path))
            case .millisecondsSince1970: return .value(try number(date.timeIntervalSince1970 * 1000, at: path))
            case .iso8601:
                guard date.timeIntervalSince1970.isFinite else {
                    throw AppDataEncoder.Failure.nonFinite(path: pathDescription(path))
                }
                return .value(.string(date.formatted(.iso8601)))
            }
        }
        if T.self == Data.self, let data = value as? Data {
            switch options.data {
            case .base64: return .value(.string(data.base64EncodedString()))
            case .deferredToData: return .value(.array(data.map { .number(String($0)) }))
            }
        }
        if T.self == URL.self, let url = value as? URL { return .value(.string(url.absoluteString)) }
        if T.self == RawJSONObject.self, let raw = value as? RawJSONObject { return .value(.rawJSON(raw.compactText)) }
        if T.self == Decimal.self, let decimal = value as? Decimal {
            guard decimal.isFinite else { throw AppDataEncoder.Failure.nonFinite(path: pathDescription(path)) }
            return .value(.number(decimal.description))
        }
        let nested = TreeEncoder(codingPath: path, options: options)
        try value.encode(to: nested)
        if T.self is UnorderedDictionaryMarker.Type, case .object(let box) = nested.slot {
            box.sortKeys = true
        }
        return nested.slot ?? .value(.object([]))
    }

    func number(_ value: Double, at path: [CodingKey]) throws -> AppDataEncoder.Node {
        guard value.isFinite else { throw AppDataEncoder.Failure.nonFinite(path: pathDescription(path)) }
        return .number(JSONWriter.format(value))
    }

    func number(_ value: Float, at path: [CodingKey]) throws -> AppDataEncoder.Node {
        guard value.isFinite else { throw AppDataEncoder.Failure.nonFinite(path: pathDescription(path)) }
        return .number(JSONWriter.format(value))
    }
}

// MARK: - Containers

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: ObjectBox
    let encoder: TreeEncoder
    let codingPath: [CodingKey]

    private func path(_ key: Key) -> [CodingKey] { codingPath + [key] }

    mutating func encodeNil(forKey key: Key) throws { box.set(.value(.null), for: encoder.name(of: key)) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        box.set(.value(.bool(value)), for: encoder.name(of: key))
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        box.set(.value(.string(value)), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        box.set(.value(try encoder.number(value, at: path(key))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        box.set(.value(try encoder.number(value, at: path(key))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        box.set(.value(.number(String(value))), for: encoder.name(of: key))
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.set(try encoder.wrap(value, at: path(key)), for: encoder.name(of: key))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        box.set(.object(nested), for: encoder.name(of: key))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, encoder: encoder, codingPath: path(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let nested = ArrayBox()
        box.set(.array(nested), for: encoder.name(of: key))
        return UnkeyedContainer(box: nested, encoder: encoder, codingPath: path(key))
    }

    mutating func superEncoder() -> Encoder {
        let sub = TreeEncoder(codingPath: codingPath + [SuperKey()], options: encoder.options)
        box.set(.encoder(sub), for: "super")
        return sub
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        let sub = TreeEncoder(codingPath: path(key), options: encoder.options)
        box.set(.encoder(sub), for: encoder.name(of: key))
        return sub
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: ArrayBox
    let encoder: TreeEncoder
    let codingPath: [CodingKey]
    var count: Int { box.items.count }

    private var nextPath: [CodingKey] { codingPath + [IndexKey(box.items.count)] }

    mutating func encodeNil() throws { box.items.append(.value(.null)) }
    mutating func encode(_ value: Bool) throws { box.items.append(.value(.bool(value))) }
    mutating func encode(_ value: String) throws { box.items.append(.value(.string(value))) }
    mutating func encode(_ value: Double) throws { box.items.append(.value(try encoder.number(value, at: nextPath))) }
    mutating func encode(_ value: Float) throws { box.items.append(.value(try encoder.number(value, at: nextPath))) }
    mutating func encode(_ value: Int) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: Int8) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: Int16) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: Int32) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: Int64) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: UInt) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: UInt8) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: UInt16) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: UInt32) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode(_ value: UInt64) throws { box.items.append(.value(.number(String(value)))) }
    mutating func encode<T: Encodable>(_ value: T) throws { box.items.append(try encoder.wrap(value, at: nextPath)) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        let path = nextPath
        box.items.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, encoder: encoder, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let nested = ArrayBox()
        let path = nextPath
        box.items.append(.array(nested))
        return UnkeyedContainer(box: nested, encoder: encoder, codingPath: path)
    }

    mutating func superEncoder() -> Encoder {
        let sub = TreeEncoder(codingPath: nextPath, options: encoder.options)
        box.items.append(.encoder(sub))
        return sub
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    let codingPath: [CodingKey]

    private func set(_ node: AppDataEncoder.Node) { encoder.slot = .value(node) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try encoder.number(value, at: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try encoder.number(value, at: codingPath)) }
    mutating func encode(_ value: Int) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { set(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { encoder.slot = try encoder.wrap(value, at: codingPath) }
}
