/// The launch image shown when the user opens the app from the alert (`launch-image`).
public struct LaunchImage: AlertComponent, Hashable {
    /// The image file in the app bundle.
    public let fileName: String
    /// A launch image by file name.
    public init(_ fileName: String) { self.fileName = fileName }
    /// Adds this component to the alert being built; the result builder calls it.
    public func apply(to content: inout AlertContent) { content.set(\.launchImage, fileName, name: "LaunchImage") }
}
