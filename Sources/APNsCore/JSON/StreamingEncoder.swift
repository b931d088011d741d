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
    static func writeMembers<T: Encodable>(
        of value: T, into writer: inout JSONWriter, reservedKeys: Set<String>
    ) throws(GiveUp) {
        // Move the writer in (no copy of its bytes) and always back out, so a caller that gives
        // up can rewind it.
        let state = StreamState.make(reservedKeys: reservedKeys)
        swap(&state.core.pointee.writer, &writer)
        defer { swap(&state.core.pointee.writer, &writer) }
        let encoder = StreamEncoder(state: state, topLevel: true)
        do {
            try value.encode(to: encoder)
        } catch {
            throw GiveUp()
        }
        guard !state.core.pointee.failed, encoder.opened == .object || encoder.opened == .none else { throw GiveUp() }
    }
}

/// The state of one streaming encode, shared by its encoders and containers.
///
/// The mutable part is the buffer's header, reached through a pointer: without the dynamic
/// exclusivity checks that stored `var`s of a class get, in the same allocation as the object, and
/// alive as long as any encoder or container of the encode is (a value that keeps its container
/// past `encode(to:)` writes into an emptied writer, harmlessly).
private final class StreamState: ManagedBuffer<StreamState.Core, UInt8> {
    struct Core {
        var writer = JSONWriter(capacity: 0)
        /// The container that may be written to now: the one opened last and not yet closed.
        var innermost = 0
        /// The keys written so far in every open keyed container, each container's from its start index.
        var keys: [String] = []
        var nextID = 0
        var failed = false
        var reservedKeys: Set<String>
    }

    static func make(reservedKeys: Set<String>) -> StreamState {
        unsafeDowncast(create(minimumCapacity: 0) { _ in Core(reservedKeys: reservedKeys) }, to: StreamState.self)
    }

    /// The header; its address is fixed for the object's lifetime.
    @inline(__always) var core: UnsafeMutablePointer<Core> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    @inline(__always) var failed: Bool {
        get { core.pointee.failed }
        set { core.pointee.failed = newValue }
    }

    /// Whether `name` is reserved at the top level; most calls reserve one key, compared directly.
    func isReserved(_ name: String) -> Bool {
        let reserved = core.pointee.reservedKeys
        return reserved.count == 1 ? reserved.first == name : reserved.contains(name)
    }

    /// Opens a container inside the innermost one; returns its id and the id to restore on close.
    func push() -> (id: Int, parent: Int) {
        core.pointee.nextID += 1
        let parent = core.pointee.innermost
        core.pointee.innermost = core.pointee.nextID
        return (core.pointee.nextID, parent)
    }

    /// `id` must be the innermost open container.
    @inline(__always) func check(_ id: Int) throws {
        guard !core.pointee.failed, core.pointee.innermost == id else {
            core.pointee.failed = true
            throw StreamingEncoder.GiveUp()
        }
    }

    func write<T: Encodable>(_ value: T) throws {
        if T.self == String.self, let string = value as? String { return core.pointee.writer.string(string) }
        if T.self == Int.self, let int = value as? Int { return core.pointee.writer.int(int) }
        if T.self == Double.self, let double = value as? Double { return try number(double) }
        if T.self == Bool.self, let bool = value as? Bool { return core.pointee.writer.bool(bool) }
        if T.self == Date.self, let date = value as? Date { return try number(date.timeIntervalSinceReferenceDate) }
        if T.self == Data.self, let data = value as? Data {
            return core.pointee.writer.string(data.base64EncodedString())
        }
        if T.self == URL.self, let url = value as? URL { return core.pointee.writer.string(url.absoluteString) }
        if T.self == Decimal.self || T.self == RawJSONObject.self || T.self is UnorderedDictionaryMarker.Type {
            throw StreamingEncoder.GiveUp()
        }
        let child = StreamEncoder(state: self, topLevel: false)
        try value.encode(to: child)
        try child.close()
    }

    func number(_ value: Double) throws {
        guard value.isFinite else { throw StreamingEncoder.GiveUp() }
        core.pointee.writer.double(value)
    }

    func number(_ value: Float) throws {
        guard value.isFinite else { throw StreamingEncoder.GiveUp() }
        core.pointee.writer.numberLiteral(JSONWriter.format(value))
    }
}

private final class StreamEncoder: Encoder {
    enum Opened { case none, object, array, single }

    let state: StreamState
    let topLevel: Bool
    var opened = Opened.none
    var id = 0
    /// The container that was innermost before this encoder opened its own.
    var parent = 0
    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(state: StreamState, topLevel: Bool) {
        self.state = state
        self.topLevel = topLevel
    }

    private func open(_ kind: Opened) {
        if opened != .none { state.failed = true }
        opened = kind
        (id, parent) = state.push()
    }

    /// Where this encoder's keyed container's keys start in `state.core.pointee.keys`.
    var keysStart = 0

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        open(.object)
        keysStart = state.core.pointee.keys.count
        if !topLevel { state.core.pointee.writer.beginObject() }  // the top level's members go into the outer object
        return KeyedEncodingContainer(StreamKeyed<Key>(state: state, id: id, topLevel: topLevel, keysStart: keysStart))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        open(.array)
        if topLevel { state.failed = true }  // not an object
        state.core.pointee.writer.beginArray()
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
            state.core.pointee.writer.beginObject()  // encoded nothing: an empty object, as JSONEncoder writes
            state.core.pointee.writer.endObject()
        case .object:
            try state.check(id)
            state.core.pointee.innermost = parent
            state.core.pointee.keys.removeSubrange(keysStart...)
            state.core.pointee.writer.endObject()
        case .array:
            try state.check(id)
            state.core.pointee.innermost = parent
            state.core.pointee.writer.endArray()
        case .single:
            try state.check(id)
            state.core.pointee.innermost = parent
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
        if state.core.pointee.keys[keysStart...].contains(name) || (topLevel && state.isReserved(name)) {
            state.failed = true
            throw StreamingEncoder.GiveUp()
        }
        state.core.pointee.keys.append(name)
        state.core.pointee.writer.key(name)
    }

    mutating func encodeNil(forKey key: Key) throws { try self.key(key); state.core.pointee.writer.null() }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.bool(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.string(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws { try self.key(key); try state.number(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try self.key(key); try state.number(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        try self.key(key); state.core.pointee.writer.int(value)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try self.key(key); try state.write(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
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

    mutating func encodeNil() throws { try next(); state.core.pointee.writer.null() }
    mutating func encode(_ value: Bool) throws { try next(); state.core.pointee.writer.bool(value) }
    mutating func encode(_ value: String) throws { try next(); state.core.pointee.writer.string(value) }
    mutating func encode(_ value: Double) throws { try next(); try state.number(value) }
    mutating func encode(_ value: Float) throws { try next(); try state.number(value) }
    mutating func encode(_ value: Int) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int8) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int16) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int32) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int64) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt8) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt16) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt32) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt64) throws { try next(); state.core.pointee.writer.int(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try next(); try state.write(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
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

    mutating func encodeNil() throws { try once(); state.core.pointee.writer.null() }
    mutating func encode(_ value: Bool) throws { try once(); state.core.pointee.writer.bool(value) }
    mutating func encode(_ value: String) throws { try once(); state.core.pointee.writer.string(value) }
    mutating func encode(_ value: Double) throws { try once(); try state.number(value) }
    mutating func encode(_ value: Float) throws { try once(); try state.number(value) }
    mutating func encode(_ value: Int) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int8) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int16) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int32) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: Int64) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt8) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt16) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt32) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode(_ value: UInt64) throws { try once(); state.core.pointee.writer.int(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try once(); try state.write(value) }
}
