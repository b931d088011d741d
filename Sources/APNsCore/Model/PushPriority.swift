/// The `apns-priority` header value (<doc:ProtocolReference#Device-requests>).
///
/// Each push type exposes only the priorities it allows as its own nested `Priority` type
/// (`AlertNotification.Priority`), so an illegal priority does not compile; this struct is the wire
/// value they map to.
public struct PushPriority: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// 10, 5 or 1.
    public let rawValue: Int

    /// 10: deliver now.
    public static let immediate = PushPriority(rawValue: 10)
    /// 5: deliver at a time that saves power on the device.
    public static let powerConsiderate = PushPriority(rawValue: 5)
    /// 1: lowest; alerts only.
    public static let low = PushPriority(rawValue: 1)

    /// The priority with this header value, or `nil` if APNs knows no such priority.
    public init?(headerValue: String) {
        switch headerValue {
        case "10": self = .immediate
        case "5": self = .powerConsiderate
        case "1": self = .low
        default: return nil
        }
    }

    private init(rawValue: Int) { self.rawValue = rawValue }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String { String(rawValue) }
    public static func < (lhs: PushPriority, rhs: PushPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}
