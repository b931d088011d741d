#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// When APNs may stop trying to deliver a notification (`apns-expiration`, <doc:ProtocolReference#Device-requests>).
///
/// Leave it `nil` on a notification to let Apple's storage policy decide.
///
/// ```swift
/// let once = Expiration.immediately                          // one attempt, never stored
/// let later = try Expiration.at(Date(timeIntervalSince1970: 1_900_000_000))
/// ```
public struct Expiration: Hashable, Sendable, CustomStringConvertible {
    /// UNIX seconds; 0 means one delivery attempt, never stored.
    public let unixSeconds: Int

    /// One delivery attempt; APNs does not store the notification (`apns-expiration: 0`).
    public static let immediately = Expiration(seconds: 0)

    /// Deliver until `date`, rounded down to a whole second.
    /// - Throws: ``APNsValidationError/invalidDate(key:)`` for a date before 1970 or beyond what
    ///   UNIX seconds can hold, as ``init(unixSeconds:)`` does for a negative number (use
    ///   ``immediately`` for "do not store").
    public static func at(_ date: Date) throws(APNsValidationError) -> Expiration {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= 0, seconds < Double(Int.max) else {
            throw .invalidDate(key: APNsRequest.Header.Name.apnsExpiration.rawValue)
        }
        return Expiration(seconds: Int(seconds.rounded(.down)))
    }

    /// An expiration in UNIX seconds, for values read from elsewhere.
    /// - Throws: ``APNsValidationError`` when `unixSeconds` is negative.
    public init(unixSeconds: Int) throws(APNsValidationError) {
        guard unixSeconds >= 0 else { throw .invalidExpiration(unixSeconds) }
        self.unixSeconds = unixSeconds
    }

    private init(seconds: Int) { unixSeconds = seconds }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { String(unixSeconds) }
}
