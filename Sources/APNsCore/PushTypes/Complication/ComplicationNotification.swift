/// Updates a watchOS complication, delivered to PushKit (`apns-push-type: complication`).
///
/// The payload is your app data alone — any `Encodable & Sendable` that encodes as a keyed
/// container — written in the order its `encode(to:)` writes it. There are no APNs components:
/// `Alert`, `Badge` and the others do not compile here.
///
/// ```swift
/// let update = ComplicationNotification(bundleID: "com.example.weather", appData: Forecast(high: 21, low: 12))
/// // {"high":21,"low":12}
/// ```
///
/// Rules (`Complication+Rules.swift`): topic = bundle id + `.complication`; priority 10 or 5
/// (default 10); $(PushType.complication.maximumPayloadSize) bytes; token or certificate connectors; device targets.
public struct ComplicationNotification<AppData: Encodable & Sendable>: TokenDeliverable, CertificateDeliverable,
    BundleAddressed, StandardPrioritized
{
    /// 10 (default) or 5.
    public typealias Priority = StandardPriority

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .complication }

    public var bundleID: String
    /// The whole payload.
    public var appData: AppData
    /// How `appData` is encoded: `JSONEncoder`'s default strategies unless changed
    /// (``AppDataEncoding``).
    public var appDataEncoding: AppDataEncoding = .default
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?

    /// A complication push for the app `bundleID`; every option has the default Apple applies.
    ///
    /// - Parameters:
    ///   - bundleID: The app's bundle id, without the suffix.
    ///   - appData: The payload.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil`, `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(
        bundleID: String, appData: AppData, priority: Priority = .immediate, expiration: Expiration? = nil,
        collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.bundleID = bundleID
        self.appData = appData
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        try writer.appData(appData, reservedKeys: [], encoding: appDataEncoding)
        writer.endObject()
    }
}
