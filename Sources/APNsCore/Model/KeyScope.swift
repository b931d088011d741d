/// What a token-based key (a `.p8` file) may send, as the developer account set it when the key
/// was made (<doc:ProtocolReference#Token-authentication>): a team-scoped key sends for every app
/// of the team, to one environment or both; a topic-specific key sends for its apps only, to one
/// environment.
///
/// Tell a ``TokenConnector`` its key's scope (`scope:`) and it refuses, before any I/O, what the
/// key cannot send: an environment it is not for when the connector is made
/// (``CredentialError/keyNotForEnvironment(keyID:connector:key:)``), an app it does not cover on
/// each send (``CredentialError/keyDoesNotCoverTopic(keyID:topic:covered:)``). A connector not told
/// sends, and APNs answers 403 BadEnvironmentKeyIdInToken or 400 TopicDisallowed, whose advice says
/// the same.
///
/// ```swift
/// let scope = KeyScope.topics(["com.example.shop"], environment: .production)
/// let connector = try TokenConnector(
///     teamID: teamID, keyID: keyID, key: .file(path: keyPath), scope: scope, environment: .production)
/// ```
///
/// Thread safety: a value; `Sendable`.
public struct KeyScope: Sendable, Hashable, CustomStringConvertible {
    /// An APNs environment a key may be restricted to.
    public typealias Environment = PushCertificate.Environment

    /// The environments the key sends to.
    public let environments: Set<Environment>
    /// The apps (bundle ids) whose topics the key sends to, every push type's; nil for every app of
    /// the team.
    public let bundleIDs: Set<String>?

    /// A team-scoped key for both environments: every key made before Apple added scopes, and the
    /// default when a key is made today.
    public static let team = KeyScope(environments: Set(Environment.allCases), bundleIDs: nil)

    /// A team-scoped key restricted to one environment (Apple allows two such keys per
    /// environment).
    public static func team(_ environment: Environment) -> KeyScope {
        KeyScope(environments: [environment], bundleIDs: nil)
    }

    /// A topic-specific key: the apps whose topics it covers (up to 400, Apple's limit), in one
    /// environment. A push type's suffixed topic (`com.example.shop.voip`) is its app's.
    public static func topics(_ bundleIDs: Set<String>, environment: Environment) -> KeyScope {
        KeyScope(environments: [environment], bundleIDs: bundleIDs)
    }

    /// Whether the key sends for `bundleID`'s topics.
    public func covers(bundleID: String) -> Bool { bundleIDs?.contains(bundleID) ?? true }

    /// `team (sandbox, production)`, `topics com.a, com.b (production)`.
    public var description: String {
        let where_ = environments.sorted().map(\.rawValue).joined(separator: ", ")
        guard let bundleIDs else { return "team (\(where_))" }
        return "topics \(bundleIDs.sorted().joined(separator: ", ")) (\(where_))"
    }
}

extension KeyScope {
    /// The scope written as `apns send --key-scope` and `apns-gateway credential add --key-scope`
    /// take it, and as the gateway stores it: `team`, `team:ENVIRONMENT` or
    /// `topics:ENVIRONMENT:BUNDLE[,BUNDLE…]`; nil when `argument` is none of these
    /// (``argumentForms`` says what is).
    public init?(argument: String) {
        let parts = argument.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        let environment = parts.count > 1 ? Environment(rawValue: parts[1]) : nil
        switch (parts.first, parts.count, environment) {
        case ("team", 1, _):
            self = .team
        case ("team", 2, let environment?):
            self = .team(environment)
        case ("topics", 3, let environment?):
            let bundleIDs = parts[2].split(separator: ",", omittingEmptySubsequences: false).map { item in
                String(item.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
            }
            guard !bundleIDs.contains("") else { return nil }
            self = .topics(Set(bundleIDs), environment: environment)
        default:
            return nil
        }
    }

    /// The scope in the form ``init(argument:)`` reads: `team`, `team:sandbox`,
    /// `topics:production:com.a,com.b` (bundle ids sorted).
    public var argument: String {
        let environment = environments.count == 1 ? environments.first.map { ":\($0.rawValue)" } ?? "" : ""
        guard let bundleIDs else { return "team" + environment }
        return "topics\(environment):\(bundleIDs.sorted().joined(separator: ","))"
    }

    /// What ``init(argument:)`` reads, for a usage message.
    public static let argumentForms =
        "team, team:sandbox, team:production or topics:ENVIRONMENT:BUNDLE[,BUNDLE…] (e.g. topics:production:com.example.shop)"
}
