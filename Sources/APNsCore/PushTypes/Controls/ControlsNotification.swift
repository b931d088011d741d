/// Reloads the app's Control Center controls (`apns-push-type: controls`).
///
/// The payload is fixed by Apple: `{"aps":{"content-changed":true}}`. There is nothing to build, so there is no builder: an
/// `Alert` or any other component does not compile here. Token connectors only (<doc:ProtocolReference#Push-types>).
///
/// ```swift
/// let notification = ControlsNotification(bundleID: "com.example.app")
/// try await send(notification, via: tokenConnector, to: device)
/// ```
///
/// Rules (`Controls+Rules.swift`): topic = bundle id + `.push-type.controls`; priority 10 or 5
/// (default 10); 4096 bytes; token connectors; device targets.
public struct ControlsNotification: TokenDeliverable, BundleAddressed, StandardPrioritized {
    /// 10 (default) or 5.
    public typealias Priority = StandardPriority

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .controls }

    public var bundleID: String
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?

    /// A controls push for the app `bundleID`; every option has the default Apple applies.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil` (Apple's storage policy), `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id; APNs assigns one if `nil`.
    public init(
        bundleID: String, priority: Priority = .immediate, expiration: Expiration? = nil,
        collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.bundleID = bundleID
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.fixedAPS {
            $0.literalKey("content-changed"); $0.bool(true)
        }
    }
}
