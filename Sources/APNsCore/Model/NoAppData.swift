/// The app data of a notification that carries none: nothing is written beside `aps`.
public struct NoAppData: Encodable, Hashable, Sendable {
    /// No app data.
    public init() {}
    public func encode(to encoder: Encoder) throws {}
}
