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

    /// A new random id.
    public init() { uuid = UUID() }

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
    public var description: String { uuid.uuidString.lowercased() }
}
