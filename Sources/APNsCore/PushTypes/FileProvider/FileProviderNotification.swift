/// Tells a File Provider extension that a container changed (`apns-push-type: fileprovider`).
///
/// The payload has no `aps`: `{"container-identifier":…,"domain":…}`.
///
/// ```swift
/// let notification = FileProviderNotification(
///     bundleID: "com.example.files", containerIdentifier: "NSFileProviderWorkingSetContainerItemIdentifier",
///     domain: "com.example.files.domain")
/// try await send(notification, via: tokenConnector, to: device)
/// ```
///
/// Rules (`FileProvider+Rules.swift`): topic = bundle id + `.pushkit.fileprovider`; priority 10 or 5
/// (default 10); 4096 bytes; token connectors only; device targets.
public struct FileProviderNotification: TokenDeliverable, BundleAddressed, StandardPrioritized {
    /// 10 (default) or 5.
    public typealias Priority = StandardPriority

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .fileprovider }

    public var bundleID: String
    /// The container item identifier that changed.
    public var containerIdentifier: String
    /// The File Provider domain identifier.
    public var domain: String
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?

    /// A File Provider push for the app `bundleID`; every option has the default Apple applies.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - containerIdentifier: `container-identifier`.
    ///   - domain: `domain`.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil`, `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(
        bundleID: String, containerIdentifier: String, domain: String, priority: Priority = .immediate,
        expiration: Expiration? = nil, collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.bundleID = bundleID
        self.containerIdentifier = containerIdentifier
        self.domain = domain
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        writer.literalKey("container-identifier")
        writer.string(containerIdentifier)
        writer.literalKey("domain")
        writer.string(domain)
        writer.endObject()
    }
}
