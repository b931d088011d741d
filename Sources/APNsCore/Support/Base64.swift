/// Standard base64 (RFC 4648 section 4, with padding), as APNs issues channel ids and accessories
/// send their responses: one or more groups of four characters from `A–Z a–z 0–9 + /`, the last
/// group ending in at most two `=`. The same rule as the pattern
/// `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$`, which the
/// gateway's schema states.
enum Base64 {
    static func isStandard(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return false }
        var padding = 0
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // A character after padding, or one outside the alphabet.
            guard padding == 0, isAlphabet(byte) else { return false }
        }
        return padding <= 2
    }

    private static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }
}
