/// The shared body of every payload builder in swift-apns.
///
/// Each payload kind has its own `@resultBuilder` type (``AlertNotificationBuilder``,
/// ``AlertBuilder``, …) whose `Component` is that kind's component protocol, so a component from
/// another kind does not compile inside it. They all gather components in order with `if`,
/// `if let`, `switch` and `for`; the notification applies them to its payload value.
public protocol ComponentBuilder {
    associatedtype Component
}

extension ComponentBuilder {
    public static func buildExpression(_ component: Component) -> [Component] { [component] }
    public static func buildBlock(_ parts: [Component]...) -> [Component] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [Component]?) -> [Component] { part ?? [] }
    public static func buildEither(first part: [Component]) -> [Component] { part }
    public static func buildEither(second part: [Component]) -> [Component] { part }
    public static func buildArray(_ parts: [[Component]]) -> [Component] { parts.flatMap { $0 } }
    public static func buildLimitedAvailability(_ part: [Component]) -> [Component] { part }
}
