import Foundation

/// A device to push to, identified by the hex device token the app received from APNs.
///
/// The token is validated when the value is made: an even number of hex digits, in either case,
/// stored in lowercase; a mistake throws ``APNsError``, as `send` does. Its length is not assumed
/// (<doc:ProtocolReference#Device-requests>).
///
/// ```swift
/// let device = try Device(token: "0F2A…")
/// ```
public struct Device: Hashable, Sendable, CustomStringConvertible {
    /// The token as lowercase hex.
    public let token: String

    /// A device from the hex token the app registered.
    ///
    /// ```swift
    /// let device = try Device(token: tokenFromTheApp)
    /// ```
    ///
    /// - Parameter token: The token as hex digits, in either case, as the app reported it.
    /// - Throws: ``APNsError/validation(_:)`` with ``APNsValidationError/invalidDeviceToken(_:)``
    ///   when `token` is empty, too long, has an odd number of digits, or contains anything but hex
    ///   digits; the message says which, and how to get the hex form. It is ``APNsError``, as `send`
    ///   throws, so one `do`/`catch` around both matches by case.
    public init(token: String) throws(APNsError) {
        do { self = try Device(validatingToken: token) } catch { throw .validation(error) }
    }

    /// ``init(token:)`` for the library's own code that throws validation errors only.
    package init(validatingToken token: String) throws(APNsValidationError) {
        // Read through one buffer: iterating `String.UTF8View` byte by byte is several times
        // slower, and a server makes one `Device` for each stored token it sends to.
        // `withUTF8` also makes a bridged or foreign string native, once.
        var token = token
        let (count, firstNonHex, hasUppercase) = token.withUTF8 { utf8 -> (Int, Int?, Bool) in
            // Refused by its length below: not read.
            guard utf8.count <= 2 * Device.maximumTokenBytes else { return (utf8.count, nil, false) }
            var hasUppercase = false
            for offset in utf8.indices {
                let byte = utf8[offset]
                guard Hex.value(byte) != nil else { return (utf8.count, offset, false) }
                if Device.uppercase.contains(byte) { hasUppercase = true }
            }
            return (utf8.count, nil, hasUppercase)
        }
        guard count > 0 else { throw .invalidDeviceToken("the token is empty") }
        guard count <= 2 * Device.maximumTokenBytes else {
            throw .invalidDeviceToken(
                "the token has \(count) hex digits; at most \(2 * Device.maximumTokenBytes) are accepted (\(Device.maximumTokenBytes) bytes): pass the token the app registered, not another value"
            )
        }
        if let firstNonHex { throw .invalidDeviceToken(Device.notHex(token, at: firstNonHex)) }
        guard count % 2 == 0 else {
            throw .invalidDeviceToken(
                "the token has \(count) hex digits, and a token's bytes make an even number: part of it is missing; pass the whole token the app reported"
            )
        }
        guard hasUppercase else {
            self.token = token  // already lowercase: kept, not copied
            return
        }
        self.token = token.withUTF8 { utf8 in
            String(unsafeUninitializedCapacity: count) { buffer in
                for index in utf8.indices {
                    let byte = utf8[index]
                    buffer[index] = Device.uppercase.contains(byte) ? byte + 32 : byte
                }
                return count
            }
        }
    }

    /// Why `token`, whose character at `offset` (in UTF-8) is not a hex digit, is no token, and what
    /// to pass instead. Names the character's position, never the token.
    private static func notHex(_ token: String, at offset: Int) -> String {
        let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("<") && trimmed.hasSuffix(">") {
            return
                "this is the description of the token's Data (\"<00fc13ad ff785122 …>\", as NSData printed it before iOS 13), not the token: send the bytes as hex from the app (deviceToken.map { String(format: \"%02x\", $0) }.joined()), or remove \"<\", \">\" and the spaces"
        }
        if trimmed.hasPrefix("0x") || trimmed.hasPrefix("0X") {
            return "the token starts with \"0x\": pass the hex digits alone"
        }
        if trimmed != token, trimmed.utf8.allSatisfy({ Hex.value($0) != nil }) {
            return "the token has white space around it: trim it (a line read from a file keeps its newline)"
        }
        return
            "character \(offset + 1) is not a hex digit: a device token is hex (0-9, a-f), as the app reported it, not a bundle id, user id or a base64 string"
    }

    private static let uppercase = UInt8(ascii: "A")...UInt8(ascii: "F")

    /// A device from the raw token bytes the app received in
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    ///
    /// - Throws: ``APNsError/validation(_:)`` with ``APNsValidationError/invalidDeviceToken(_:)``
    ///   when there are no bytes, more than ``maximumTokenBytes``, or when the bytes are the
    ///   token's hex text (`Data(hex.utf8)`) rather than the token: pass that text to
    ///   ``init(token:)``.
    public init<Bytes: Collection>(tokenBytes: Bytes) throws(APNsError) where Bytes.Element == UInt8 {
        do { self = try Device(validatingTokenBytes: tokenBytes) } catch { throw .validation(error) }
    }

    /// ``init(tokenBytes:)`` for code that throws validation errors only.
    package init<Bytes: Collection>(validatingTokenBytes tokenBytes: Bytes) throws(APNsValidationError)
    where Bytes.Element == UInt8 {
        guard !tokenBytes.isEmpty else { throw .invalidDeviceToken("the token is empty") }
        guard tokenBytes.count <= Device.maximumTokenBytes else {
            throw .invalidDeviceToken(
                "the token has \(tokenBytes.count) bytes; at most \(Device.maximumTokenBytes) are accepted: pass the token the app registered, not another value"
            )
        }
        // A token's own bytes are random: 16 or more that are all ASCII hex digits (a chance of
        // about 10⁻¹⁷ for a real token) are its hex text, made bytes with `Data(hex.utf8)`.
        if tokenBytes.count >= 16, tokenBytes.allSatisfy({ Hex.value($0) != nil }) {
            throw .invalidDeviceToken(
                "these \(tokenBytes.count) bytes are the token's hex text, not the token's \(tokenBytes.count / 2) bytes: pass the text to Device(token:) instead of its UTF-8 to Device(tokenBytes:)"
            )
        }
        // Called from another module this generic is not specialised: iterating `tokenBytes`
        // would cost a protocol-witness call per byte. Contiguous bytes (`[UInt8]`, `Data`) are
        // read through one buffer instead.
        self.token =
            tokenBytes.withContiguousStorageIfAvailable(Device.hex)
            ?? Array(tokenBytes).withUnsafeBufferPointer(Device.hex)
    }

    /// The longest token accepted, in bytes: 256. Device tokens are 32 bytes today and Apple says
    /// their length may change (<doc:ProtocolReference#Device-requests>), so no length is assumed;
    /// eight times today's leaves room to grow, while a value that is no token (a JWT, a file's
    /// contents) is refused before it becomes a request path.
    public static let maximumTokenBytes = 256

    /// Lowercase hex of `bytes`.
    private static func hex(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let digits = Hex.digits
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = digits.utf8Start[Int(byte >> 4)]
                buffer[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    /// The request path for this device (<doc:ProtocolReference#Device-requests>).
    public var path: String { Device.pathPrefix + token }

    /// What every device's path starts with; the token follows.
    package static let pathPrefix = "/3/device/"

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { token }
}
