/// Wakes the app in the background to fetch new content (`apns-push-type: background`).
///
/// The `aps` dictionary is exactly `{"content-available":1}`; your data goes beside it. There is no
/// priority to set (Apple accepts only 5) and no builder: an alert, badge or sound does not compile
/// here.
///
/// ```swift
/// struct Sync: Encodable, Sendable { var acme1: String; var acme2: Int }
/// let notification = BackgroundNotification(bundleID: "com.example.app", appData: Sync(acme1: "bar", acme2: 42))
/// // {"aps":{"content-available":1},"acme1":"bar","acme2":42}
/// ```
///
/// Rules (<doc:ProtocolReference#Push-types>, `Background+Rules.swift`): topic = bundle id; priority 5 only;
/// 4096 bytes; token or certificate connectors; device targets.
public struct BackgroundNotification<AppData: Encodable & Sendable>: TokenDeliverable, CertificateDeliverable,
    BundleAddressed
{
    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .background }

    public var bundleID: String
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?
    /// Your keys, written at the root of the payload (beside `aps` where the push type has one).
    public var appData: AppData
    /// How `appData` is encoded: `JSONEncoder`'s default strategies unless changed
    /// (``AppDataEncoding``).
    public var appDataEncoding: AppDataEncoding = .default

    /// Always 5: Apple rejects background pushes at 10.
    public var pushPriority: PushPriority { Self.pushType.defaultPriority }

    /// A background push for the app `bundleID`; every option has the default Apple applies.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id (`apns-topic`).
    ///   - appData: Your keys, written after `aps`.
    ///   - expiration: `nil` (Apple's storage policy), `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id; APNs assigns one if `nil`.
    public init(
        bundleID: String, appData: AppData, expiration: Expiration? = nil,
        collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.bundleID = bundleID
        self.appData = appData
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        writer.literalKey("aps")
        writer.beginObject()
        writer.literalKey("content-available")
        writer.int(1)
        writer.endObject()
        try writer.appData(appData, encoding: appDataEncoding)
        writer.endObject()
    }
}

extension BackgroundNotification where AppData == NoAppData {
    /// A background notification with no app data: `{"aps":{"content-available":1}}`.
    public init(bundleID: String, expiration: Expiration? = nil, collapseID: CollapseID? = nil, apnsID: APNsID? = nil) {
        self.init(
            bundleID: bundleID, appData: NoAppData(), expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }
}

// Clear diagnostics for what a background notification cannot have. These initialisers exist only
// so the compiler names the rule instead of a confusing type mismatch; none can be called.
extension BackgroundNotification {
    @available(
        *, unavailable,
        message:
            "A background notification has no priority to set: Apple accepts only 5, which swift-apns always sends."
    )
    public init(
        bundleID: String, appData: AppData, priority: PushPriority, expiration: Expiration? = nil,
        collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.init(bundleID: bundleID, appData: appData, expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }

    @available(
        *, unavailable,
        message:
            "A background notification carries no alert, badge or sound (Apple allows only content-available and app data). Use AlertNotification for anything the user sees."
    )
    public init(
        bundleID: String, appData: AppData, expiration: Expiration? = nil, collapseID: CollapseID? = nil,
        apnsID: APNsID? = nil, @AlertNotificationBuilder _ components: () -> [any AlertNotificationComponent]
    ) {
        self.init(bundleID: bundleID, appData: appData, expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }
}

extension BackgroundNotification where AppData == NoAppData {
    @available(
        *, unavailable,
        message:
            "A background notification has no priority to set: Apple accepts only 5, which swift-apns always sends."
    )
    public init(
        bundleID: String, priority: PushPriority, expiration: Expiration? = nil, collapseID: CollapseID? = nil,
        apnsID: APNsID? = nil
    ) {
        self.init(bundleID: bundleID, expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }

    @available(
        *, unavailable,
        message:
            "A background notification carries no alert, badge or sound (Apple allows only content-available and app data). Use AlertNotification for anything the user sees."
    )
    public init(
        bundleID: String, expiration: Expiration? = nil, collapseID: CollapseID? = nil, apnsID: APNsID? = nil,
        @AlertNotificationBuilder _ components: () -> [any AlertNotificationComponent]
    ) {
        self.init(bundleID: bundleID, expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }
}
