/// An accessory's response to a forwarded notification, sent on to the iPhone it came from
/// (`apns-push-type: accessory`).
///
/// An accessory that shows the iPhone's notifications over the internet answers through your
/// server: it sends you its encrypted response, the session identifier, the ratchet's key id and
/// message index, and the push token it received; you send them to that token as they came. The
/// system decrypts the response and hands it to your app's data provider extension. Every field is
/// written into `aps` as a string, `messageIndex` too:
/// `{"aps":{"encryptedData":…,"sessionIdentifier":…,"keyID":…,"messageIndex":"42"}}`.
///
/// ```swift
/// let response = AccessoryNotification(
///     bundleID: "com.example.companion", encryptedData: encryptedData, sessionIdentifier: sessionIdentifier,
///     keyID: ratchetKeyID, messageIndex: messageIndex)
/// try await send(response, via: connector, to: Device(token: pushToken))
/// ```
///
/// Rules (`Accessory+Rules.swift`): topic = the companion app's bundle id + `.push-type.accessory`;
/// priority 10 or 5 (default 10); 4096 bytes; token and certificate connectors; device targets.
/// `encryptedData` and `keyID` must be standard base64 and `sessionIdentifier` not empty
/// (``APNsValidationError/invalidAccessoryField(_:)``). Where Apple's pages are silent:
/// <doc:ProtocolReference#Push-types>.
public struct AccessoryNotification: TokenDeliverable, CertificateDeliverable, BundleAddressed, StandardPrioritized {
    /// 10 (default) or 5.
    public typealias Priority = StandardPriority

    /// The push type and its rules (<doc:ProtocolReference#Push-types>).
    public static var pushType: PushType { .accessory }

    public var bundleID: String
    /// The accessory's encrypted response, base64, as the accessory sent it.
    public var encryptedData: String
    /// The session the response belongs to, as the accessory sent it.
    public var sessionIdentifier: String
    /// The ratchet's key id, base64, as the accessory sent it.
    public var keyID: String
    /// The ratchet step that encrypted the response (written as a decimal string).
    public var messageIndex: UInt64
    public var priority: Priority
    public var expiration: Expiration?
    public var collapseID: CollapseID?
    public var apnsID: APNsID?

    /// An accessory's response for the companion app `bundleID`.
    ///
    /// - Parameters:
    ///   - bundleID: The companion app's bundle id, without the suffix.
    ///   - encryptedData: The encrypted response, standard base64.
    ///   - sessionIdentifier: The session identifier; not empty.
    ///   - keyID: The ratchet's key id, standard base64.
    ///   - messageIndex: The ratchet's outgoing message index.
    ///   - priority: `.immediate` (default) or `.powerConsiderate`.
    ///   - expiration: `nil` (Apple's storage policy), `.immediately`, or `try .at(date)`.
    ///   - collapseID: At most 64 bytes.
    ///   - apnsID: The notification's id; APNs assigns one if `nil`.
    public init(
        bundleID: String, encryptedData: String, sessionIdentifier: String, keyID: String, messageIndex: UInt64,
        priority: Priority = .immediate, expiration: Expiration? = nil, collapseID: CollapseID? = nil,
        apnsID: APNsID? = nil
    ) {
        self.bundleID = bundleID
        self.encryptedData = encryptedData
        self.sessionIdentifier = sessionIdentifier
        self.keyID = keyID
        self.messageIndex = messageIndex
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks the rules types cannot express, then writes the JSON body.
    public func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        guard Base64.isStandard(encryptedData) else { throw .invalidAccessoryField("encryptedData") }
        guard !sessionIdentifier.isEmpty else { throw .invalidAccessoryField("sessionIdentifier") }
        guard Base64.isStandard(keyID) else { throw .invalidAccessoryField("keyID") }
        writer.fixedAPS {
            $0.literalKey("encryptedData"); $0.string(encryptedData)
            $0.literalKey("sessionIdentifier"); $0.string(sessionIdentifier)
            $0.literalKey("keyID"); $0.string(keyID)
            $0.literalKey("messageIndex"); $0.string(String(messageIndex))
        }
    }
}
