/// The launch image shown when the user opens the app from the alert (`launch-image`).
public struct LaunchImage: AlertComponent, Hashable {
    public let fileName: String
    public init(_ fileName: String) { self.fileName = fileName }
    public func apply(to content: inout AlertContent) { content.set(\.launchImage, fileName, name: "LaunchImage") }
}
