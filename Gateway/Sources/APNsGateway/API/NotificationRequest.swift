@_spi(Description) import APNs
import Foundation

/// A `POST /v1/notifications` body, read into the library's typed notification for its push type,
/// so that what the gateway queues has passed the same rules as a Swift caller's notification.
///
/// The fields (the wire format's names where APNs has one; `openapi.yaml` describes them):
///
/// ```json
/// {"push-type": "alert", "bundle-id": "com.example.app", "priority": 10,
///  "alert": {"title": "Hello", "body": "World"}, "badge": 1, "data": {"gameID": 7},
///  "devices": ["00fc13adff78…"]}
/// ```
///
/// Thread safety: a value type; `Sendable`.
package struct NotificationRequest: Sendable {
    /// The push type.
    package let pushType: PushType
    /// The app the notification is for: its bundle id (for `mdm`, the MDM topic). API keys are
    /// allowed by this name.
    package let app: String
    /// The APNs environment it names (`"environment"`), or nil for its app's credential's default.
    package let environment: GatewayEnvironment?
    /// The devices, each token checked; empty when the notification goes to a ``channel``.
    package let devices: [Device]
    /// When it is due (`send-at`), or nil for at once: never claimed before then.
    package let sendAt: Date?
    /// How far ahead a `send-at` may be: a schedule longer than this belongs in the app, which
    /// still knows then whether the push is wanted.
    package static let maximumScheduleAhead: Duration = .seconds(30 * 86_400)
    /// The smallest `send-at` taken (1973 in milliseconds): a smaller number is seconds, a mistake.
    static let earliestSendAt: Int64 = 100_000_000_000
    /// The typed notification, every rule checked.
    package let notification: any PushNotification
    /// The body without `devices`, compact with sorted keys: what the queue stores and the sender
    /// reads back (``NotificationRequest/init(storedJSON:)``). A Live Activity's `timestamp`, when
    /// absent, is fixed here at acceptance so that every device gets the same one.
    package let storedJSON: String

    /// Reads and checks a request body; `maximumDevices` bounds `devices`.
    ///
    /// - Throws: ``RequestProblem`` naming the field and the rule, with nothing queued.
    package init(body: [UInt8], maximumDevices: Int, now: Date = Date()) throws(RequestProblem) {
        var fields = try NotificationRequest.object(body)
        let devicesValue = fields.removeValue(forKey: "devices")
        let channelValue = fields.removeValue(forKey: "channel")
        var devices: [Device] = []
        var tokensGiven = 0
        var channelID: String?
        switch (devicesValue, channelValue) {
        case (nil, nil):
            throw RequestProblem(
                field: "devices",
                "give the device tokens to send to: \"devices\": [\"<hex token>\", …], or a broadcast channel: \"channel\": \"<channel id>\""
            )
        case (_?, _?):
            throw RequestProblem(field: "channel", "give \"devices\" or \"channel\", not both")
        case (nil, let value?):
            guard case .string(let id) = value else {
                throw RequestProblem(field: "channel", "is \(value.typeName); give the channel id APNs returned")
            }
            channelID = id
        case (let value?, nil):
            (devices, tokensGiven) = try NotificationRequest.devices(value, maximumDevices: maximumDevices)
        }
        if fields["push-type"] == .string("liveactivity"), fields["timestamp"] == nil {
            fields["timestamp"] = .integer(Int64(now.timeIntervalSince1970))
        }
        let spec = try NotificationSpec(fields)
        if spec.apnsID != nil, channelID != nil {
            throw RequestProblem(
                field: "apns-id", "a broadcast's apns-id is APNs' own; give apns-id with one device, or leave it out")
        }
        if spec.apnsID != nil, tokensGiven > 1 {
            throw RequestProblem(
                field: "apns-id",
                "one apns-id names one push, and this request gives \(tokensGiven) tokens: send one device per request with its own apns-id, or leave it out (the gateway gives each device-send its own, the same on every attempt)"
            )
        }
        if let sendAt = spec.sendAt {
            guard sendAt <= now + NotificationRequest.maximumScheduleAhead else {
                throw RequestProblem(
                    field: NotificationSpec.sendAtField,
                    "is \(Int((sendAt - now).seconds / 86_400)) days ahead; a notification may be scheduled at most \(Int(NotificationRequest.maximumScheduleAhead.seconds / 86_400)) days ahead: keep a later one in the app and post it nearer its time",
                    kind: .unprocessable)
            }
            if let expiration = spec.notification.expiration?.unixSeconds, expiration > 0,
                Double(expiration) < sendAt.timeIntervalSince1970
            {
                throw RequestProblem(
                    field: NotificationSpec.sendAtField,
                    "is after the notification's expiration (\(expiration) UNIX seconds): it would expire before it is due; give a later expiration or an earlier send-at",
                    kind: .unprocessable)
            }
        }
        self.pushType = spec.pushType
        self.app = spec.app
        self.environment = spec.environment
        self.sendAt = spec.sendAt
        self.devices = devices
        self.notification = spec.notification
        self.storedJSON = JSONValue.object(fields).compactText
        if let channelID {
            guard spec.notification is any BroadcastDeliverable else {
                throw RequestProblem(
                    field: "channel",
                    "a broadcast channel takes a liveactivity update or end; send \(spec.pushType.rawValue) to \"devices\""
                )
            }
            do {
                channel = try BroadcastChannel(id: channelID, bundleID: spec.app)
            } catch {
                throw RequestProblem(field: "channel", error.description)
            }
        } else {
            channel = nil
        }
    }

    /// The broadcast channel, when the notification goes to one instead of devices.
    package let channel: BroadcastChannel?

    /// What the queue stores per target: each device's token, or `channel:` and the channel id.
    package var targets: [String] {
        if let channel { return [NotificationRequest.channelPrefix + channel.id] }
        return devices.map(\.token)
    }

    /// The prefix of a channel target in the queue.
    static let channelPrefix = "channel:"

    /// `devices`, every token checked, at most `maximumDevices` given; with how many were given.
    /// A token given twice (in any case: it is hex) is one device and is sent once — a second push
    /// would be a second alert on the same phone, and the answer's `devices` counts what was queued.
    private static func devices(
        _ value: JSONValue, maximumDevices: Int
    ) throws(RequestProblem) -> (devices: [Device], given: Int) {
        guard case .array(let tokens) = value, !tokens.isEmpty else {
            throw RequestProblem(
                field: "devices",
                "is \(value.typeName == "an array" ? "empty" : value.typeName); give an array of 1 to \(maximumDevices) hex device tokens"
            )
        }
        guard tokens.count <= maximumDevices else {
            throw RequestProblem(
                field: "devices", "has \(tokens.count) tokens; at most \(maximumDevices) go in one request: split it")
        }
        var devices: [Device] = []
        devices.reserveCapacity(tokens.count)
        var seen = Set<String>()
        for (index, token) in tokens.enumerated() {
            guard case .string(let text) = token else {
                throw RequestProblem(field: "devices[\(index)]", "is \(token.typeName); a device token is a hex string")
            }
            let device: Device
            do { device = try Device(token: text) } catch {
                throw RequestProblem(field: "devices[\(index)]", error.description)
            }
            if seen.insert(device.token).inserted { devices.append(device) }
        }
        return (devices, tokens.count)
    }

    /// Checks the rules that need a request (payload size, what the push type allows) and that
    /// the app's credential (`policy`) may send this push type to the environment it names.
    package func check(for policy: CredentialPolicy) throws(RequestProblem) {
        if let environment, !policy.environments.contains(environment) {
            throw RequestProblem(
                field: NotificationSpec.environmentField,
                "the credential that serves \(app) (\(policy.credential)) sends to \(policy.environments.map(\.rawValue).joined(separator: " and ")) only; leave \"environment\" out or give one of those",
                kind: .notForThisGateway)
        }
        try check(for: policy.authenticationMethod)
    }

    /// Checks the rules that need a request (payload size, what the push type allows) and that
    /// a connector authenticating with `method` may send this push type.
    package func check(for method: AuthenticationMethod) throws(RequestProblem) {
        do {
            if let channel, let broadcast = notification as? any BroadcastDeliverable {
                try broadcast.validatedRequest(to: channel).checkRules(for: method)
            } else if let device = devices.first {
                try notification.validatedRequest(to: device).checkRules(for: method)
            }
        } catch {
            // What JSON Schema cannot say gets its own status, so that a body valid under
            // openapi.yaml is never a 400: the encoded payload's size (413) and the gateway's own
            // credential (403: an mdm push needs a certificate, a widget push a token).
            let kind: RequestProblem.Kind
            switch error {
            case .payloadTooLarge: kind = .tooLarge
            case .authenticationNotAllowed: kind = .notForThisGateway
            default: kind = .invalid
            }
            var field = channel != nil ? "channel" : nil
            if case .invalidAccessoryField(let name) = error {
                field = NotificationField(accessoryMember: name)?.rawValue
            }
            throw RequestProblem(field: field, error.description, kind: kind)
        }
    }

    /// The notification stored by ``storedJSON``, read and checked again before it is sent.
    static func notification(storedJSON: String) throws(RequestProblem) -> NotificationSpec {
        try NotificationSpec(object(Array(storedJSON.utf8)))
    }

    /// The body as a JSON object, or a problem that says what it is instead.
    static func object(_ body: [UInt8]) throws(RequestProblem) -> [String: JSONValue] {
        do { return try JSONValue.object(body) } catch { throw RequestProblem(error) }
    }
}

/// What is wrong with a request, naming the field and the rule: the `detail` of a problem+json
/// answer (400, or 413 and 403 for the two rules ``Kind`` names).
package struct RequestProblem: Error, CustomStringConvertible, Sendable, Equatable {
    /// Which answer a problem gets.
    package enum Kind: Sendable, Equatable {
        /// The body breaks a rule `openapi.yaml` states: 400.
        case invalid
        /// The notification's APNs payload is over its push type's limit, which a schema cannot
        /// state (it counts encoded bytes): 413.
        case tooLarge
        /// A valid notification that the gateway's APNs credential cannot send (mdm needs a
        /// certificate; widgets, controls, location and fileprovider a token): 403.
        case notForThisGateway
        /// A rule about time a schema cannot state (a `send-at` too far ahead, or after the
        /// notification's expiration): 422.
        case unprocessable
    }

    /// The field at fault (`devices[3]`, `alert.title`), when one is.
    package let field: String?
    /// What is wrong and how to fix it.
    package let message: String
    /// Which answer it gets.
    package let kind: Kind

    init(field: String? = nil, _ message: String, kind: Kind = .invalid) {
        self.field = field
        self.message = message
        self.kind = kind
    }

    package var description: String { field.map { "\($0): \(message)" } ?? message }
}

/// What a gateway crash may cost a notification's device-sends. APNs has no idempotency: a push sent
/// twice buzzes twice.
enum DeliverySemantics: String, Sendable {
    /// After a crash, device-sends that may have been sent are sent again (the default): none is
    /// lost, a few may arrive twice.
    case atLeastOnce = "at-least-once"
    /// Before a device-send may be written to APNs its start is recorded; after a crash, one
    /// recorded as started is reported `failed` with `delivery: unknown` instead of being sent
    /// again: none arrives twice, a few may be lost.
    case atMostOnce = "at-most-once"
}

/// The notification fields of a request (everything but `devices`), read into the library's
/// description of a notification, which builds the push type's typed notification: the `apns`
/// command reads its flags into the same description, so both follow one set of rules.
struct NotificationSpec: Sendable {
    let pushType: PushType
    let app: String
    let notification: any PushNotification
    /// The client's `apns-id`, when it gave one (one device or a channel only).
    let apnsID: APNsID?
    /// What a crash may cost: a repeat (`at-least-once`, the default) or a loss (`at-most-once`).
    let delivery: DeliverySemantics

    /// Where it is sent: nil for its app's credential's default (the first it allows).
    let environment: GatewayEnvironment?
    /// When it is sent (`send-at`): nil for at once.
    let sendAt: Date?

    /// The gateway's own fields beside the notification's.
    static let deliveryField = "delivery"
    static let environmentField = "environment"
    static let sendAtField = "send-at"

    init(_ fields: [String: JSONValue]) throws(RequestProblem) {
        let reader = JSONFieldReader(fields: fields)
        let description: NotificationDescription
        do {
            description = try NotificationDescription(
                json: fields,
                frontEndFields: [
                    NotificationSpec.sendAtField, NotificationSpec.deliveryField, NotificationSpec.environmentField,
                ],
                unknownField: "is not a field of a notification request; see openapi.yaml")
        } catch {
            throw RequestProblem(error)
        }
        let name: PushType.Name
        do { name = try description.checkedPushType() } catch { throw RequestProblem(error) }
        let sendAt = try reader.sendAt()
        let delivery = try reader.delivery()
        let environment = try reader.environment()
        do {
            // A Live Activity's timestamp is fixed at acceptance (NotificationRequest), so `now`
            // is never used for one read from a request or from the queue.
            notification = try description.notification(now: Date(timeIntervalSince1970: 0))
        } catch {
            throw RequestProblem(error)
        }
        self.pushType = name.pushType
        self.app = description.app ?? ""
        self.apnsID = notification.apnsID
        self.delivery = delivery
        self.environment = environment
        self.sendAt = sendAt
    }
}

extension RequestProblem {
    /// A description's problem in the gateway's words: fields by their JSON names.
    init(_ problem: NotificationDescription.Problem) { self.init(JSONProblem(problem)) }

    /// A problem of the library's JSON reader, as the gateway answers it.
    init(_ problem: JSONProblem) { self.init(field: problem.field, problem.message) }
}

/// The gateway's own fields beside the notification's, read with the library's reader of JSON
/// fields (its problems in the gateway's words).
extension JSONFieldReader {
    func gatewayString(_ key: String) throws(RequestProblem) -> String? {
        do { return try string(key) } catch { throw RequestProblem(error) }
    }

    func gatewayInteger(_ key: String) throws(RequestProblem) -> Int? {
        do { return try integer(key) } catch { throw RequestProblem(error) }
    }

    func delivery() throws(RequestProblem) -> DeliverySemantics {
        let key = NotificationSpec.deliveryField
        guard let text = try gatewayString(key) else { return .atLeastOnce }
        guard let semantics = DeliverySemantics(rawValue: text) else {
            throw RequestProblem(
                field: key,
                "\(text) is not a delivery semantics; give at-least-once (the default: after a crash, what may have been sent is sent again) or at-most-once (it is reported failed with delivery unknown instead)"
            )
        }
        return semantics
    }

    /// `send-at`: milliseconds since 1970, as the gateway writes every time; a number that reads
    /// as seconds (before 1973 in milliseconds) is refused rather than sent at once.
    func sendAt() throws(RequestProblem) -> Date? {
        let key = NotificationSpec.sendAtField
        guard let milliseconds = try gatewayInteger(key) else { return nil }
        guard milliseconds >= NotificationRequest.earliestSendAt else {
            throw RequestProblem(
                field: key,
                "\(milliseconds) is before 1973 in milliseconds since 1970 — seconds, most likely; give milliseconds (\(milliseconds) × 1000), or leave it out to send at once"
            )
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    func environment() throws(RequestProblem) -> GatewayEnvironment? {
        let key = NotificationSpec.environmentField
        guard let text = try gatewayString(key) else { return nil }
        guard let environment = GatewayEnvironment(rawValue: text) else {
            throw RequestProblem(
                field: key,
                "\(text) is not an APNs environment; give sandbox or production, or leave it out for the app's credential's default"
            )
        }
        return environment
    }
}
