#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Writes compact, deterministic JSON straight into a byte buffer.
///
/// The rules (documented in the Payloads article of the APNs documentation) are the ones every payload in swift-apns follows:
/// strings are escaped per RFC 8259 with the quote, the backslash and the control characters
/// U+0000–U+001F escaped (`\"`, `\\`, `\u00xx` with lowercase hex); `/` and non-ASCII characters are
/// written as they are, in UTF-8. Integers are written as integers, doubles in their shortest
/// round-trip form without a trailing `.0` (as `JSONEncoder` writes them), and non-finite numbers are
/// rejected by the callers before they get here.
///
/// Commas are placed automatically: every value and every key starts with a comma when something
/// was written before it at the same level.
///
/// Storage: one growable buffer, copied on write like `Array`, but each write checks room once and
/// then stores its bytes directly (a string is one check and one copy, not one per byte).
///
/// While it writes, the writer notes what the run-time rules need to know of the payload's `aps`
/// dictionary (which keys it has, its `event` and its `timestamp`), so that checking
/// a request never parses its body again.
///
/// Thread safety: a value type; use each instance from one task at a time.
public struct JSONWriter: Sendable {
    /// The buffer behind a writer. Copies of a writer share it until one of them writes.
    ///
    /// `@unchecked Sendable`: it is only written through a writer that holds the sole reference
    /// (`isKnownUniquelyReferenced`), so a shared buffer is never mutated.
    private final class Storage: @unchecked Sendable {
        let base: UnsafeMutablePointer<UInt8>
        let capacity: Int

        init(capacity: Int) {
            self.capacity = Swift.max(capacity, 16)
            base = .allocate(capacity: self.capacity)
        }

        deinit { base.deallocate() }
    }

    private var storage: Storage
    /// How many bytes are written.
    public private(set) var count = 0
    private var needsComma = false

    /// Where the writer is relative to `aps`, for ``facts``.
    fileprivate enum APSState: UInt8 {
        /// No `aps` key at the root yet, or its value was not an object.
        case outside
        /// The root key `aps` was written; its value comes next.
        case keyWritten
        /// Inside the `aps` object (at `depth` 2 its own keys are written).
        case inside
        /// The `aps` object is closed.
        case closed
        /// Raw JSON text was written where it may hold `aps` or its keys: the facts are unknown.
        case opaque
    }
    /// Objects and arrays open: 1 inside the root object, 2 inside `aps` (or another root value).
    private var depth: Int32 = 0
    private var aps = APSState.outside
    /// `event` or `timestamp` was written in `aps`; its value is noted when it is a string or an integer.
    private var pendingFact: PayloadFacts.Keys = []
    private var noted = PayloadFacts()

    /// What the writer noted of `aps` (see ``PayloadFacts``), or nil when raw JSON text written
    /// at the root or in `aps` hid it.
    var facts: PayloadFacts? { aps == .opaque ? nil : noted }

    /// Notes a key written at `depth`: `aps` at the root, the keys the rules look at inside it.
    @inline(__always)
    private mutating func note(key: UnsafeBufferPointer<UInt8>) {
        if depth == 1 {
            if key.count == 3, key.elementsEqual("aps".utf8) {
                if aps == .outside { aps = .keyWritten }
            } else if aps == .keyWritten {
                aps = .outside
            }
        } else if depth == 2, aps == .inside {
            pendingFact = []
            guard let fact = PayloadFacts.Keys(utf8: key) else { return }
            noted.keys.insert(fact)
            if fact == .event || fact == .timestamp { pendingFact = fact }
        }
    }

    /// Raw JSON text hides what it holds: at the root, as the value of `aps`, or as a fact's value.
    private mutating func noteRawValue() {
        if depth == 0 || (depth == 1 && aps == .keyWritten) || (depth == 2 && aps == .inside && !pendingFact.isEmpty) {
            aps = .opaque
        }
    }

    /// Creates a writer with room for `capacity` bytes before it grows.
    public init(capacity: Int = 512) {
        storage = Storage(capacity: capacity)
    }

    /// The bytes written so far.
    public var bytes: [UInt8] {
        Array(UnsafeBufferPointer(start: storage.base, count: count))
    }

    // MARK: Structure

    /// Opens an object (`{`).
    public mutating func beginObject() {
        let out = reserve(2)
        var at = 0
        if needsComma { out[0] = UInt8(ascii: ","); at = 1 }
        out[at] = UInt8(ascii: "{")
        count += at + 1
        needsComma = false
        if depth == 1, aps == .keyWritten { aps = .inside }
        depth += 1
    }

    /// Closes the innermost object (`}`).
    public mutating func endObject() {
        put(UInt8(ascii: "}"))
        needsComma = true
        depth -= 1
        if depth == 1, aps == .inside { aps = .closed }
    }

    /// Opens an array (`[`).
    public mutating func beginArray() {
        separate()
        put(UInt8(ascii: "["))
        needsComma = false
        if depth == 1, aps == .keyWritten { aps = .outside }
        depth += 1
    }

    /// Closes the innermost array (`]`).
    public mutating func endArray() {
        put(UInt8(ascii: "]"))
        needsComma = true
        depth -= 1
    }

    /// Writes `"key":`; the next value written belongs to it.
    public mutating func key(_ key: String) {
        separate()
        appendQuoted(key)
        put(UInt8(ascii: ":"))
        needsComma = false
        if depth <= 2 {
            var key = key
            key.withUTF8 { note(key: $0) }
        }
    }

    /// Writes `"key":` for a key known when the library was compiled (`"aps"`, `"badge"`, …):
    /// ASCII that needs no escaping, so it is copied without being scanned.
    mutating func literalKey(_ key: StaticString) {
        let length = key.utf8CodeUnitCount
        assert(
            UnsafeBufferPointer(start: key.utf8Start, count: length).allSatisfy {
                $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
            }, "literal keys are plain ASCII")
        let out = reserve(length + 4)
        var at = 0
        if needsComma { out[0] = UInt8(ascii: ","); at = 1 }
        out[at] = UInt8(ascii: "\"")
        (out + at + 1).update(from: key.utf8Start, count: length)
        out[at + 1 + length] = UInt8(ascii: "\"")
        out[at + 2 + length] = UInt8(ascii: ":")
        count += at + 3 + length
        needsComma = false
        if depth <= 2 { note(key: UnsafeBufferPointer(start: key.utf8Start, count: length)) }
    }

    // MARK: Values

    /// Writes a string, escaped as RFC 8259 requires.
    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
        if pendingFact == .event, depth == 2 {
            noted.event = value
            pendingFact = []
        }
    }

    /// Writes an integer.
    public mutating func int<I: BinaryInteger>(_ value: I) {
        separate()
        let small = Int64(exactly: value)
        if let small {
            appendDigits(small)
        } else {
            appendASCII(String(value))
        }
        needsComma = true
        if pendingFact == .timestamp, depth == 2 {
            noted.timestamp = small
            pendingFact = []
        }
    }

    /// Writes a 64-bit integer's decimal digits without allocating a String.
    private mutating func appendDigits(_ value: Int64) {
        // At most 20 characters: a sign and 19 digits.
        let out = reserve(20)
        if value == 0 {
            out[0] = UInt8(ascii: "0")
            count += 1
            return
        }
        var magnitude = value.magnitude
        var digits = 0
        var probe = magnitude
        while probe > 0 {
            digits += 1
            probe /= 10
        }
        let sign = value < 0 ? 1 : 0
        if sign == 1 { out[0] = UInt8(ascii: "-") }
        var index = sign + digits - 1
        while magnitude > 0 {
            out[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            index -= 1
        }
        count += sign + digits
    }

    /// Writes a finite double in its shortest round-trip form (`0.5`, `1e-07`, `3` for 3.0).
    /// Callers reject non-finite values first; a non-finite value here is written as `null`.
    public mutating func double(_ value: Double) {
        separate()
        guard value.isFinite else {
            appendASCII("null")
            needsComma = true
            return
        }
        appendASCII(JSONWriter.format(value))
        needsComma = true
        if pendingFact == .timestamp, depth == 2 {
            // A whole number is written without a fraction ("2"), so the body says an integer.
            noted.timestamp = value.rounded(.towardZero) == value ? Int64(exactly: value) : nil
            pendingFact = []
        }
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separate()
        appendASCII(value ? "true" : "false")
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        appendASCII("null")
        needsComma = true
    }

    /// Writes an already formatted JSON number (for example a `Decimal`'s description).
    /// Writes already-valid compact JSON as one value.
    mutating func rawValue(_ json: String) {
        noteRawValue()
        separate()
        appendASCII(json)
        needsComma = true
    }

    mutating func numberLiteral(_ literal: String) {
        separate()
        appendASCII(literal)
        needsComma = true
        if pendingFact == .timestamp, depth == 2 {
            noted.timestamp = Int64(literal)
            pendingFact = []
        }
    }

    /// Appends pre-validated, compact object members (`"a":1,"b":2`) at the current position.
    mutating func rawMembersText(_ members: Substring) {
        if depth == 1 || (depth == 2 && aps == .inside) { aps = .opaque }
        separate()
        var members = members
        members.withUTF8 { put($0) }
        needsComma = true
    }

    /// Appends one pre-validated, compact JSON value at the current position.
    mutating func rawValueText(_ value: Substring) {
        noteRawValue()
        separate()
        var value = value
        value.withUTF8 { put($0) }
        needsComma = true
    }

    /// Where the writer is, to go back to if a streaming encode has to start over.
    struct Checkpoint {
        fileprivate let count: Int
        fileprivate let needsComma: Bool
        fileprivate let depth: Int32
        fileprivate let aps: APSState
        fileprivate let pendingFact: PayloadFacts.Keys
        fileprivate let noted: PayloadFacts
    }

    func checkpoint() -> Checkpoint {
        Checkpoint(
            count: count, needsComma: needsComma, depth: depth, aps: aps, pendingFact: pendingFact, noted: noted)
    }

    mutating func rewind(to checkpoint: Checkpoint) {
        count = Swift.min(count, checkpoint.count)
        needsComma = checkpoint.needsComma
        depth = checkpoint.depth
        aps = checkpoint.aps
        pendingFact = checkpoint.pendingFact
        noted = checkpoint.noted
    }

    // MARK: Helpers

    /// The JSON text of a finite double as `JSONEncoder` writes it: Swift's shortest round-trip
    /// description without a trailing `.0`.
    static func format(_ value: Double) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    static func format(_ value: Float) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    /// Room for `extra` more bytes, at the end of a buffer only this writer holds: the one
    /// uniqueness and capacity check of a write.
    @inline(__always)
    private mutating func reserve(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        if _slowPath(!isKnownUniquelyReferenced(&storage) || count + extra > storage.capacity) {
            grow(toHold: count + extra)
        }
        return storage.base + count
    }

    private mutating func grow(toHold needed: Int) {
        let larger = Storage(capacity: Swift.max(needed, storage.capacity * 2))
        larger.base.update(from: storage.base, count: count)
        storage = larger
    }

    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        reserve(1).pointee = byte
        count += 1
    }

    @inline(__always)
    private mutating func put(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let source = buffer.baseAddress, !buffer.isEmpty else { return }
        reserve(buffer.count).update(from: source, count: buffer.count)
        count += buffer.count
    }

    @inline(__always)
    private mutating func separate() {
        if needsComma { put(UInt8(ascii: ",")) }
    }

    private mutating func appendASCII(_ text: String) {
        var text = text
        text.withUTF8 { put($0) }
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    private mutating func appendQuoted(_ text: String) {
        var text = text
        // Native Swift strings are contiguous UTF-8: `withUTF8` lends them without copying.
        text.withUTF8 { buffer in
            let length = buffer.count
            var index = 0
            while index < length {
                let byte = buffer[index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                index += 1
            }
            if index == length, let source = buffer.baseAddress {
                // Nothing to escape, the usual case: one reservation, one copy.
                let out = reserve(length + 2)
                out[0] = UInt8(ascii: "\"")
                (out + 1).update(from: source, count: length)
                out[length + 1] = UInt8(ascii: "\"")
                count += length + 2
                return
            }
            put(UInt8(ascii: "\""))
            var start = 0
            while index < length {
                let byte = buffer[index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    put(UnsafeBufferPointer(rebasing: buffer[start..<index]))
                    appendEscaped(byte)
                    start = index + 1
                }
                index += 1
            }
            put(UnsafeBufferPointer(rebasing: buffer[start..<length]))
            put(UInt8(ascii: "\""))
        }
    }

    /// How many bytes `utf8` takes inside a JSON string as ``string(_:)`` writes it (without the
    /// quotes): 2 for `"` and `\`, 6 for a control character (`\u00xx`), 1 for any other byte.
    /// Truncation measures text with it; it mirrors `appendEscaped`.
    static func escapedCount(_ utf8: some Sequence<UInt8>) -> Int {
        var count = 0
        for byte in utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                count += 2
            } else if byte < 0x20 {
                count += 6
            } else {
                count += 1
            }
        }
        return count
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""):
            put(UInt8(ascii: "\\"))
            put(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"):
            put(UInt8(ascii: "\\"))
            put(UInt8(ascii: "\\"))
        default:
            let out = reserve(6)
            let hex = JSONWriter.hexDigits.utf8Start
            out[0] = UInt8(ascii: "\\")
            out[1] = UInt8(ascii: "u")
            out[2] = UInt8(ascii: "0")
            out[3] = UInt8(ascii: "0")
            out[4] = hex[Int(byte >> 4)]
            out[5] = hex[Int(byte & 0x0F)]
            count += 6
        }
    }
}
