/// Tells a managed device to contact its MDM server (`apns-push-type: mdm`).
///
/// The payload is exactly `{"mdm":"<PushMagic>"}`; the topic is the UID of the MDM push
/// certificate (`com.apple.mgmt.…`), not a bundle id. Certificate connectors only: a token
/// connector does not compile.
///
/// ```swift
/// let notification = MDMNotification(topic: "com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5",
///                                    pushMagic: "040ac7bf-391a-4a36-a8ab-47bd380afd33")
/// try await send(notification, via: mdmCertificateConnector, to: device)
/// ```
///
/// Rules (`MDM+Rules.swift`): topic = the certificate's UID; priority 10 or 5 (default 10);
/// 4096 bytes; certificate connectors only; device targets.
public struct MDMNotification: CertificateDeliverable, StandardPrioritized {
    /// 10 (default) or 5.
    public typealias Priority = StandardPriority

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .mdm }

    /// The UID of the MDM push certificate.
    public var topic: String
    /// The PushMagic string the device sent in its TokenUpdate check-in.
    public var pushMagic: String
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?

    /// An MDM push to the device enrolled with `topic`.
    ///
    /// - Parameters:
    ///   - topic: The MDM push certificate's UID (`com.apple.mgmt.…`).
    ///   - pushMagic: The device's PushMagic.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil`, `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id.
    public init(
        topic: String, pushMagic: String, priority: Priority = .immediate, expiration: Expiration? = nil,
        collapseID: CollapseID? = nil, apnsID: APNsID? = nil
    ) {
        self.topic = topic
        self.pushMagic = pushMagic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        guard Self.pushType.bundleID(fromTopic: topic) != nil else { throw .invalidMDMTopic(topic) }
        writer.beginObject()
        writer.literalKey("mdm")
        writer.string(pushMagic)
        writer.endObject()
    }
}
