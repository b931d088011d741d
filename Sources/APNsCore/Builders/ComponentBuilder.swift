/// The shared body of every payload builder in swift-apns.
///
/// Each payload kind has its own `@resultBuilder` type (``AlertNotificationBuilder``,
/// ``AlertBuilder``, …) whose `Component` is that kind's component protocol, so a component from
/// another kind does not compile inside it. They all gather components in order with `if`,
/// `if let`, `switch` and `for`; the notification applies them to its payload value.
public protocol ComponentBuilder {
    /// The component type the builder collects.
    associatedtype Component
}

extension ComponentBuilder {
    /// Result-builder support; you do not call it.
    public static func buildExpression(_ component: Component) -> [Component] { [component] }
    /// Result-builder support; you do not call it.
    public static func buildBlock(_ parts: [Component]...) -> [Component] { parts.flatMap { $0 } }
    /// Result-builder support; you do not call it.
    public static func buildOptional(_ part: [Component]?) -> [Component] { part ?? [] }
    /// Result-builder support; you do not call it.
    public static func buildEither(first part: [Component]) -> [Component] { part }
    /// Result-builder support; you do not call it.
    public static func buildEither(second part: [Component]) -> [Component] { part }
    /// Result-builder support; you do not call it.
    public static func buildArray(_ parts: [[Component]]) -> [Component] { parts.flatMap { $0 } }
    /// Result-builder support; you do not call it.
    public static func buildLimitedAvailability(_ part: [Component]) -> [Component] { part }
}
