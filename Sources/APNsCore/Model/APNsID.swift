#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The `apns-id` of a notification: a UUID, sent in lowercase canonical form (<doc:ProtocolReference#Device-requests>).
///
/// ```swift
/// let id = APNsID()                                           // random
/// let known = APNsID("123e4567-e89b-12d3-a456-426614174000")  // nil unless a canonical UUID
/// ```
public struct APNsID: Hashable, Sendable, CustomStringConvertible {
    /// The UUID.
    public let uuid: UUID

    /// A new random id (a version 4 UUID).
    ///
    /// Its 122 random bits come from the system's generator (`SystemRandomNumberGenerator`):
    /// Foundation's `UUID()` opens and closes `/dev/urandom` for each id on Linux, about four times
    /// the cost.
    public init() {
        var generator = SystemRandomNumberGenerator()
        let high: UInt64 = generator.next(), low: UInt64 = generator.next()
        func byte(_ word: UInt64, _ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: word >> (56 - 8 * index)) }
        uuid = UUID(
            uuid: (
                byte(high, 0), byte(high, 1), byte(high, 2), byte(high, 3), byte(high, 4), byte(high, 5),
                byte(high, 6) & 0x0F | 0x40, byte(high, 7), byte(low, 0) & 0x3F | 0x80, byte(low, 1), byte(low, 2),
                byte(low, 3), byte(low, 4), byte(low, 5), byte(low, 6), byte(low, 7)
            ))
    }

    /// An id from a UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses the 8-4-4-4-12 hex form, in either case; `nil` for anything else.
    public init?(_ string: String) {
        // Parsed by hand: every APNs response carries one, and Foundation's parser goes through sscanf.
        var bytes:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed: Bool = withUnsafeMutableBytes(of: &bytes) { out in
            var utf8 = string.utf8
            let result: Bool? = utf8.withContiguousStorageIfAvailable { text in APNsID.parse(text, into: out) }
            if let result { return result }
            var copy = string
            copy.makeContiguousUTF8()
            utf8 = copy.utf8
            return utf8.withContiguousStorageIfAvailable { text in APNsID.parse(text, into: out) } ?? false
        }
        guard parsed else { return nil }
        uuid = UUID(uuid: bytes)
    }

    private static func parse(_ text: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard text.count == 36 else { return false }
        var byteIndex = 0
        var index = 0
        while index < 36 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard text[index] == UInt8(ascii: "-") else { return false }
                index += 1
                continue
            }
            guard let high = Hex.value(text[index]), let low = Hex.value(text[index + 1]) else { return false }
            out[byteIndex] = high << 4 | low
            byteIndex += 1
            index += 2
        }
        return byteIndex == 16
    }

    /// The header value: lowercase, 8-4-4-4-12.
    public var description: String {
        // Written by hand: one allocation, where `uuidString.lowercased()` makes two strings.
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                let digits = Hex.digits
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        out[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    out[index] = digits.utf8Start[Int(byte >> 4)]
                    out[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }
}
