#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `apns-id` of a notification: a UUID, sent in lowercase canonical form (APNs reference §2).
///
/// ```swift
/// let id = APNsID()                                           // random
/// let known = APNsID("123e4567-e89b-12d3-a456-426614174000")  // nil unless a canonical UUID
/// ```
public struct APNsID: Hashable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    /// A new random id.
    public init() { uuid = UUID() }

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses the 8-4-4-4-12 hex form, in either case; `nil` for anything else.
    public init?(_ string: String) {
        guard string.utf8.count == 36, let uuid = UUID(uuidString: string) else { return nil }
        self.uuid = uuid
    }

    /// The header value: lowercase, 8-4-4-4-12.
    public var description: String { uuid.uuidString.lowercased() }
}
