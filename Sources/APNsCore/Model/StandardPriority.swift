/// The priorities of every push type that allows 10 and 5 but not 1 (all but alert, background and
/// push-to-talk; <doc:ProtocolReference#Push-types>). Each such type exposes it as its nested `Priority`, so `.low`
/// does not compile for them.
public enum StandardPriority: Hashable, Sendable, CaseIterable {
    /// 10: deliver now (the default).
    case immediate
    /// 5: deliver when it saves power.
    case powerConsiderate

    /// The standard priority with this `apns-priority` value; `nil` for `.low` (1), which only
    /// alerts take.
    public init?(_ priority: PushPriority) {
        switch priority {
        case .immediate: self = .immediate
        case .powerConsiderate: self = .powerConsiderate
        default: return nil
        }
    }

    /// The `apns-priority` header value.
    public var pushPriority: PushPriority {
        switch self {
        case .immediate: return .immediate
        case .powerConsiderate: return .powerConsiderate
        }
    }
}
