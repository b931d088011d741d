#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The fast path of app-data encoding: writes straight into the ``JSONWriter`` with no tree, for
/// values that use their containers the way synthesised `Encodable` does (each container used
/// while it is the innermost one, each key once).
///
/// Anything else — a key written twice, a container used after a nested one was opened,
/// `nestedContainer`, `superEncoder`, a `Dictionary` (whose keys must be sorted), a non-finite
/// number, app data that is not an object or that writes a reserved key — makes it give up; the
/// caller rewinds the writer and uses ``AppDataEncoder``, which handles every case and reports
/// errors with their key path. Both produce the same bytes.
enum StreamingEncoder {
    struct GiveUp: Error {}

    /// Writes the members of `value` (an object) into the object `writer` is in.
    static func writeMembers<T: Encodable>(of value: T, into writer: inout JSONWriter, reservedKeys: Set<String>) throws(GiveUp) {
        // Move the writer in (no copy of its bytes) and always back out, so a caller that gives
        // up can rewind it.
        var taken = JSONWriter(capacity: 0)
        swap(&taken, &writer)
        let state = StreamState(writer: taken, reservedKeys: reservedKeys)
        defer { swap(&state.writer, &writer) }
        let encoder = StreamEncoder(state: state, topLevel: true)
        do {
            try value.encode(to: encoder)
        } catch {
            throw GiveUp()
        }
        guard !state.failed, encoder.opened == .object || encoder.opened == .none else { throw GiveUp() }
    }
}

private final class StreamState {
    var writer: JSONWriter
    let reservedKeys: Set<String>
    var open: [Int] = []
    /// The keys written so far in every open keyed container, each container's from its start index.
    var keys: [String] = []
    var nextID = 0
    var failed = false

    init(writer: JSONWriter, reservedKeys: Set<String>) {
        self.writer = writer
        self.reservedKeys = reservedKeys
        open.reserveCapacity(8)
        keys.reserveCapacity(16)
    }

    /// Whether `name` is reserved at the top level; most calls reserve one key, compared directly.
    func isReserved(_ name: String) -> Bool {
        reservedKeys.count == 1 ? reservedKeys.first == name : reservedKeys.contains(name)
    }

    func push() -> Int {
        nextID += 1
        open.append(nextID)
        return nextID
    }

    /// `id` must be the innermost open container.
    func check(_ id: Int) throws {
        guard !failed, open.last == id else {
            failed = true
            throw StreamingEncoder.GiveUp()
        }
    }

    func write<T: Encodable>(_ value: T) throws {
        if T.self == String.self, let string = value as? String { return writer.string(string) }
        if T.self == Int.self, let int = value as? Int { return writer.int(int) }
        if T.self == Double.self, let double = value as? Double { return try number(double) }
        if T.self == Bool.self, let bool = value as? Bool { return writer.bool(bool) }
        if T.self == Date.self, let date = value as? Date { return try number(date.timeIntervalSinceReferenceDate) }
        if T.self == Data.self, let data = value as? Data { return writer.string(data.base64EncodedString()) }
        if T.self == URL.self, let url = value as? URL { return writer.string(url.absoluteString) }
        if T.self == Decimal.self || T.self is UnorderedDictionaryMarker.Type { throw StreamingEncoder.GiveUp() }
        let child = StreamEncoder(state: self, topLevel: false)
        try value.encode(to: child)
        try child.close()
    }

    func number(_ value: Double) throws {
        guard value.isFinite else { throw StreamingEncoder.GiveUp() }
        writer.double(value)
    }

    func number(_ value: Float) throws {
        guard value.isFinite else { throw StreamingEncoder.GiveUp() }
        writer.numberLiteral(JSONWriter.format(value))
    }
}

private final class StreamEncoder: Encoder {
    enum Opened { case none, object, array, single }

    let state: StreamState
    let topLevel: Bool
    var opened = Opened.none
    var id = 0
    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(state: StreamState, topLevel: Bool) {
        self.state = state
        self.topLevel = topLevel
    }

    private func open(_ kind: Opened) {
        if opened != .none { state.failed = true }
        opened = kind
        id = state.push()
    }

    /// Where this encoder's keyed container's keys start in `state.keys`.
    var keysStart = 0

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        open(.object)
        keysStart = state.keys.count
        if !topLevel { state.writer.beginObject() }  // the top level's members go into the outer object
        return KeyedEncodingContainer(StreamKeyed<Key>(state: state, id: id, topLevel: topLevel, keysStart: keysStart))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        open(.array)
        if topLevel { state.failed = true }  // not an object
        state.writer.beginArray()
        return StreamUnkeyed(state: state, id: id)
    }

    func singleValueContainer() -> SingleValueEncodingContainer {
        open(.single)
        if topLevel { state.failed = true }  // not an object
        return StreamSingle(state: state, id: id)
    }

    /// Ends what this encoder opened, once its value's `encode(to:)` returned.
    func close() throws {
        switch opened {
        case .none:
            state.writer.beginObject()  // encoded nothing: an empty object, as JSONEncoder writes
            state.writer.endObject()
        case .object:
            try state.check(id)
            state.open.removeLast()
            state.keys.removeSubrange(keysStart...)
            state.writer.endObject()
        case .array:
            try state.check(id)
            state.open.removeLast()
            state.writer.endArray()
        case .single:
            try state.check(id)
            state.open.removeLast()
        }
    }
}

private struct StreamKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: StreamState
    let id: Int
    let topLevel: Bool
    let keysStart: Int
    var codingPath: [CodingKey] { [] }

    init(state: StreamState, id: Int, topLevel: Bool, keysStart: Int = 0) {
        self.state = state
        self.id = id
        self.topLevel = topLevel
        self.keysStart = keysStart
    }

    private mutating func key(_ key: Key) throws {
        try state.check(id)
        let name = key.stringValue
        if state.keys[keysStart...].contains(name) || (topLevel && state.isReserved(name)) {
            state.failed = true
            throw StreamingEncoder.GiveUp()
        }
        state.keys.append(name)
        state.writer.key(name)
    }

    mutating func encodeNil(forKey key: Key) throws { try self.key(key); state.writer.null() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try self.key(key); state.writer.bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try self.key(key); state.writer.string(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try self.key(key); try state.number(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try self.key(key); try state.number(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try self.key(key); state.writer.int(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try self.key(key); try state.write(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        state.failed = true
        return KeyedEncodingContainer(StreamKeyed<NestedKey>(state: state, id: -1, topLevel: false))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        state.failed = true
        return StreamUnkeyed(state: state, id: -1)
    }

    mutating func superEncoder() -> Encoder {
        state.failed = true
        return StreamEncoder(state: state, topLevel: false)
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        state.failed = true
        return StreamEncoder(state: state, topLevel: false)
    }
}

private struct StreamUnkeyed: UnkeyedEncodingContainer {
    let state: StreamState
    let id: Int
    var count = 0
    var codingPath: [CodingKey] { [] }

    private mutating func next() throws {
        try state.check(id)
        count += 1
    }

    mutating func encodeNil() throws { try next(); state.writer.null() }
    mutating func encode(_ value: Bool) throws { try next(); state.writer.bool(value) }
    mutating func encode(_ value: String) throws { try next(); state.writer.string(value) }
    mutating func encode(_ value: Double) throws { try next(); try state.number(value) }
    mutating func encode(_ value: Float) throws { try next(); try state.number(value) }
    mutating func encode(_ value: Int) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: Int8) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: Int16) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: Int32) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: Int64) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: UInt) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: UInt8) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: UInt16) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: UInt32) throws { try next(); state.writer.int(value) }
    mutating func encode(_ value: UInt64) throws { try next(); state.writer.int(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try next(); try state.write(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        state.failed = true
        return KeyedEncodingContainer(StreamKeyed<NestedKey>(state: state, id: -1, topLevel: false))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        state.failed = true
        return StreamUnkeyed(state: state, id: -1)
    }

    mutating func superEncoder() -> Encoder {
        state.failed = true
        return StreamEncoder(state: state, topLevel: false)
    }
}

private struct StreamSingle: SingleValueEncodingContainer {
    let state: StreamState
    let id: Int
    var written = false
    var codingPath: [CodingKey] { [] }

    private mutating func once() throws {
        try state.check(id)
        guard !written else {
            state.failed = true
            throw StreamingEncoder.GiveUp()
        }
        written = true
    }

    mutating func encodeNil() throws { try once(); state.writer.null() }
    mutating func encode(_ value: Bool) throws { try once(); state.writer.bool(value) }
    mutating func encode(_ value: String) throws { try once(); state.writer.string(value) }
    mutating func encode(_ value: Double) throws { try once(); try state.number(value) }
    mutating func encode(_ value: Float) throws { try once(); try state.number(value) }
    mutating func encode(_ value: Int) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: Int8) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: Int16) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: Int32) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: Int64) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: UInt) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: UInt8) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: UInt16) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: UInt32) throws { try once(); state.writer.int(value) }
    mutating func encode(_ value: UInt64) throws { try once(); state.writer.int(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try once(); try state.write(value) }
}
