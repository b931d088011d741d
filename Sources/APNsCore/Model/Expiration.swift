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

    /// The UNIX seconds from which a date (an expiration, a Live Activity's timestamp, stale or
    /// dismissal date) is refused as milliseconds read as seconds: 10¹¹, the year 5138. Any
    /// count of milliseconds since March 1973 is past it; no date a notification means is.
    public static let millisecondsThreshold = 100_000_000_000

    /// Deliver until `date`, rounded down to a whole second.
    /// - Throws: ``APNsError/validation(_:)`` with ``APNsValidationError/invalidDate(key:)`` for a
    ///   date before 1970 or beyond what UNIX seconds can hold, as ``init(unixSeconds:)`` does for
    ///   a negative number (use ``immediately`` for "do not store"). The error type of `send`, so
    ///   one `do`/`catch` holds both.
    public static func at(_ date: Date) throws(APNsError) -> Expiration {
        do { return try validated(at: date) } catch { throw .validation(error) }
    }

    /// ``at(_:)`` for code that throws validation errors only.
    package static func validated(at date: Date) throws(APNsValidationError) -> Expiration {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= 0, seconds < Double(Int.max) else {
            throw .invalidDate(key: APNsRequest.Header.Name.apnsExpiration.rawValue)
        }
        guard seconds < Double(millisecondsThreshold) else {
            throw .dateInMilliseconds(key: APNsRequest.Header.Name.apnsExpiration.rawValue)
        }
        return Expiration(seconds: Int(seconds.rounded(.down)))
    }

    /// An expiration in UNIX seconds, for values read from elsewhere.
    /// - Throws: ``APNsError/validation(_:)`` with ``APNsValidationError/invalidExpiration(_:)``
    ///   when `unixSeconds` is negative.
    public init(unixSeconds: Int) throws(APNsError) {
        do { self = try Expiration(validatingUnixSeconds: unixSeconds) } catch { throw .validation(error) }
    }

    /// ``init(unixSeconds:)`` for code that throws validation errors only.
    package init(validatingUnixSeconds unixSeconds: Int) throws(APNsValidationError) {
        guard unixSeconds >= 0 else { throw .invalidExpiration(unixSeconds) }
        guard unixSeconds < Expiration.millisecondsThreshold else {
            throw .dateInMilliseconds(key: APNsRequest.Header.Name.apnsExpiration.rawValue)
        }
        self.unixSeconds = unixSeconds
    }

    private init(seconds: Int) { unixSeconds = seconds }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { String(unixSeconds) }
}
