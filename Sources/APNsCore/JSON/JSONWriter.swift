#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes compact, deterministic JSON straight into a byte buffer.
///
/// The rules (documented in `Docs/Payloads.md`) are the ones every payload in swift-apns follows:
/// strings are escaped per RFC 8259 with the quote, the backslash and the control characters
/// U+0000–U+001F escaped (`\"`, `\\`, `\u00xx` with lowercase hex); `/` and non-ASCII characters are
/// written as they are, in UTF-8. Integers are written as integers, doubles in their shortest
/// round-trip form without a trailing `.0` (as `JSONEncoder` writes them), and non-finite numbers are
/// rejected by the callers before they get here.
///
/// Commas are placed automatically: every value and every key starts with a comma when something
/// was written before it at the same level.
///
/// Thread safety: a value type; use each instance from one task at a time.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]
    private var needsComma = false

    /// Creates a writer with room for `capacity` bytes before it grows.
    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":`; the next value written belongs to it.
    public mutating func key(_ key: String) {
        separate()
        appendQuoted(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Values

    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    public mutating func int<I: BinaryInteger>(_ value: I) {
        separate()
        if let small = Int64(exactly: value) {
            appendDigits(small)
        } else {
            appendASCII(String(value))
        }
        needsComma = true
    }

    /// Writes a 64-bit integer's decimal digits without allocating a String.
    private mutating func appendDigits(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
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
    }

    public mutating func bool(_ value: Bool) {
        separate()
        appendASCII(value ? "true" : "false")
        needsComma = true
    }

    public mutating func null() {
        separate()
        appendASCII("null")
        needsComma = true
    }

    /// Writes an already formatted JSON number (for example a `Decimal`'s description).
    mutating func numberLiteral(_ literal: String) {
        separate()
        appendASCII(literal)
        needsComma = true
    }

    /// Appends pre-validated, compact object members (`"a":1,"b":2`) at the current position.
    mutating func rawMembersText(_ members: Substring) {
        separate()
        bytes.append(contentsOf: members.utf8)
        needsComma = true
    }

    /// Appends one pre-validated, compact JSON value at the current position.
    mutating func rawValueText(_ value: Substring) {
        separate()
        bytes.append(contentsOf: value.utf8)
        needsComma = true
    }

    /// Where the writer is, to go back to if a streaming encode has to start over.
    struct Checkpoint {
        fileprivate let count: Int
        fileprivate let needsComma: Bool
    }

    func checkpoint() -> Checkpoint { Checkpoint(count: bytes.count, needsComma: needsComma) }

    mutating func rewind(to checkpoint: Checkpoint) {
        bytes.removeSubrange(checkpoint.count...)
        needsComma = checkpoint.needsComma
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

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func appendASCII(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var utf8 = text.utf8
        // Fast path: most strings need no escaping at all.
        let handled: Bool? = utf8.withContiguousStorageIfAvailable { buffer in
            var start = 0
            for index in 0..<buffer.count {
                let byte = buffer[index]
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<index]))
                appendEscaped(byte)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<buffer.count]))
            return true
        }
        if handled == nil {
            var copy = text
            copy.makeContiguousUTF8()
            utf8 = copy.utf8
            for byte in utf8 {
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                    bytes.append(byte)
                } else {
                    appendEscaped(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        default:
            bytes.append(contentsOf: [
                UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                JSONWriter.hexDigits[Int(byte >> 4)], JSONWriter.hexDigits[Int(byte & 0x0F)],
            ])
        }
    }
}
