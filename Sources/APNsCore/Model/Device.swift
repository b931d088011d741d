/// A device to push to, identified by the hex device token the app received from APNs.
///
/// The token is validated when the value is made: an even number of hex digits, in either case,
/// stored in lowercase. Its length is not assumed (APNs reference §2).
///
/// ```swift
/// let device = try Device(token: "0F2A…")
/// ```
public struct Device: Hashable, Sendable, CustomStringConvertible {
    /// The token as lowercase hex.
    public let token: String

    /// - Throws: ``APNsValidationError/invalidDeviceToken(_:)`` when `token` is empty, has an odd
    ///   length, or contains anything but hex digits.
    public init(token: String) throws(APNsValidationError) {
        let utf8 = token.utf8
        guard !utf8.isEmpty else { throw .invalidDeviceToken("the token is empty") }
        guard utf8.count % 2 == 0 else {
            throw .invalidDeviceToken("the token has \(utf8.count) hex digits; a device token has an even number")
        }
        var lower = [UInt8]()
        lower.reserveCapacity(utf8.count)
        for (offset, byte) in utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): lower.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): lower.append(byte + 32)
            default:
                throw .invalidDeviceToken(
                    "character \(offset + 1) is not a hex digit; pass the token as hex, as the app reported it")
            }
        }
        self.token = String(decoding: lower, as: UTF8.self)
    }

    /// A device from the raw token bytes the app received in
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    public init<Bytes: Collection>(tokenBytes: Bytes) throws(APNsValidationError) where Bytes.Element == UInt8 {
        guard !tokenBytes.isEmpty else { throw .invalidDeviceToken("the token is empty") }
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(tokenBytes.count * 2)
        for byte in tokenBytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        self.token = String(decoding: hex, as: UTF8.self)
    }

    /// The request path for this device (APNs reference §2).
    public var path: String { "/3/device/" + token }

    public var description: String { token }
}
