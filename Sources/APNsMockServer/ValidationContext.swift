import APNs

/// What ``RequestValidator`` asks of the server besides the request itself: whether a provider
/// token verifies, scripted rejections, broadcast channels, and the three settings that change an
/// answer.
///
/// It keeps the validator free of SwiftNIO and swift-crypto (``ServerState`` and its
/// ``TokenVerifier`` hold those), so the validator builds with `Sources/APNsCore` alone: the libFuzzer
/// harness `Fuzz/Harnesses/MockRequests.swift` compiles it that way, with a context of its own.
protocol ValidationContext: Sendable {
    /// Refuse what APNs tolerates but no correct client sends (``MockAPNsServer/Configuration/strict``).
    var strict: Bool { get }
    /// The bundle ids token connections may push to; nil for any (``MockAPNsServer/Configuration/allowedBundleIDs``).
    var allowedBundleIDs: Set<String>? { get }
    /// Whether a success carries `apns-unique-id`, as the sandbox's do (``MockAPNsServer/Configuration/environment``).
    var answersWithUniqueID: Bool { get }
    /// The shortest device token taken, in bytes (``MockAPNsServer/Configuration/minimumDeviceTokenBytes``).
    var minimumDeviceTokenBytes: Int { get }
    /// Verifies an `authorization` header's provider token (protocol reference, Token authentication).
    func verifyToken(_ authorization: String) -> TokenCheck
    /// The environment the server answers as (``MockAPNsServer/Configuration/environment``).
    var keyEnvironment: KeyScope.Environment { get }
    /// The scope of a restricted key; nil for a team key of both environments
    /// (``MockAPNsServer/Configuration/keyScopes``).
    func keyScope(of keyID: String) -> KeyScope?
    /// Whether tokens of the two keys may share a connection (``MockAPNsServer/Configuration/relatedKeys``).
    func keysAreRelated(_ first: String, _ second: String) -> Bool
    /// The answer a test scripted for a device token, if any.
    func scriptedRejection(for token: String) -> ScriptedRejection?
    /// Creates a channel and returns its id, or nil at the per-app limit.
    func createChannel(bundleID: String, policy: MessageStoragePolicy) -> String?
    func channelPolicy(bundleID: String, id: String) -> MessageStoragePolicy?
    func channelIDs(bundleID: String) -> [String]
    func deleteChannel(bundleID: String, id: String)
}

/// What a provider token check found.
enum TokenCheck: Equatable, Sendable {
    case valid(teamID: String, keyID: String, issuedAt: Int)
    case rejected(APNsRejection.Reason)
}

/// An answer scripted for one device token (``MockAPNsServer/reject(deviceToken:with:status:timestamp:)``).
struct ScriptedRejection: Sendable {
    var status: Int
    var reason: APNsRejection.Reason
    var timestamp: Int64?
}
