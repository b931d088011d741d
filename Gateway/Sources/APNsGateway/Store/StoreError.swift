/// A store that cannot be opened as configured, or a database a newer gateway has upgraded: the
/// message says which and what to do.
public struct StoreError: Error, CustomStringConvertible {
    public let description: String
    package init(_ description: String) { self.description = description }
}
