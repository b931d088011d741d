/// Tells a Push to Talk app who is speaking (`apns-push-type: pushtotalk`).
///
/// The payload is your app data alone, with no `aps` (app data that writes `aps` is a validation
/// error). Apple fixes priority 10 and expiration 0, so neither can be set.
///
/// ```swift
/// struct Speaker: Encodable, Sendable { var activeSpeaker: String }
/// let notification = PushToTalkNotification(bundleID: "com.example.radio", appData: Speaker(activeSpeaker: "Ana"))
/// // {"activeSpeaker":"Ana"}, apns-priority: 10, apns-expiration: 0
/// ```
///
/// Rules (`PushToTalk+Rules.swift`): topic = bundle id + `.voip-ptt`; priority 10 only;
/// expiration 0 only; 4096 bytes; token or certificate connectors; device targets.
public struct PushToTalkNotification<AppData: Encodable & Sendable>: TokenDeliverable, CertificateDeliverable,
    BundleAddressed
{
    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .pushtotalk }

    public var bundleID: String
    /// Your keys, written at the root of the payload (beside `aps` where the push type has one).
    public var appData: AppData
    /// How `appData` is encoded: `JSONEncoder`'s default strategies unless changed
    /// (``AppDataEncoding``).
    public var appDataEncoding: AppDataEncoding = .default
    public var collapseID: CollapseID?
    public var apnsID: APNsID?

    /// Always 10.
    public var pushPriority: PushPriority { Self.pushType.defaultPriority }
    /// Always 0: deliver once, never store.
    public var expiration: Expiration? { .immediately }

    /// A Push to Talk push for the app `bundleID`; every option has the default Apple applies.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - appData: The payload, e.g. `activeSpeaker`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(bundleID: String, appData: AppData, collapseID: CollapseID? = nil, apnsID: APNsID? = nil) {
        self.bundleID = bundleID
        self.appData = appData
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        try writer.appData(appData, encoding: appDataEncoding)
        writer.endObject()
    }
}
