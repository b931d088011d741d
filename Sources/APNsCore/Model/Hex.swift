/// Hex digits, for device tokens and apns-ids: the one place that reads and writes them.
enum Hex {
    /// Lowercase digits, as APNs writes tokens and ids.
    static let digits: StaticString = "0123456789abcdef"

    /// The value of one hex digit in either case, or nil.
    @inline(__always)
    static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
