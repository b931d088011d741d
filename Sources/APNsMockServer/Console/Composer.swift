@_spi(Description) import APNs
import Foundation

/// The console's composer: a notification given as JSON (the fields the push gateway takes), read
/// by the library's own reader into its description, checked by the same rules as a Swift caller's
/// notification, and answered with the exact request, the Swift that builds it, and — when asked —
/// the outcome of sending it through a ``ConsoleAPI/Destination``'s connector.
///
/// What a form may offer comes from the library's rules too (``pushTypes``): each push type's
/// fields (`NotificationField.fields(of:)`), priorities, connector kinds and targets. A combination
/// those rules refuse is not offered by the page and is refused here, naming the field.
///
/// Thread safety: stateless; its functions are pure but for the send.
enum Composer {
    /// What the composer offers per push type, from the library's rules.
    static var pushTypes: [[String: Any]] {
        PushType.Name.allCases.map { name in
            let type = name.pushType
            let fields = NotificationField.fields(of: name).subtracting([.pushType]).sorted()
            var object: [String: Any] = [
                "name": type.rawValue,
                "fields": fields.map { field -> [String: Any] in
                    var entry: [String: Any] = ["name": field.rawValue, "kind": kindName(field.jsonKind)]
                    if case .choice(let options) = field.jsonKind { entry["options"] = options }
                    return entry
                },
                "priorities": type.allowedPriorities.map(\.rawValue).sorted(by: >),
                "default-priority": type.defaultPriority.rawValue,
                "connectors": type.authentication.map(\.rawValue).sorted(),
                "targets": type.maximumBroadcastPayloadSize == nil ? ["device"] : ["device", "channel"],
                "maximum-payload-size": type.maximumPayloadSize,
                "app-field": name == .mdm ? NotificationField.topic.rawValue : NotificationField.bundleID.rawValue,
            ]
            if let expiration = type.requiredExpiration { object["required-expiration"] = expiration }
            if let broadcast = type.maximumBroadcastPayloadSize { object["maximum-broadcast-payload-size"] = broadcast }
            return object
        }
    }

    static func kindName(_ kind: NotificationField.JSONKind) -> String {
        switch kind {
        case .string: "string"
        case .integer: "integer"
        case .number: "number"
        case .boolean: "boolean"
        case .object: "object"
        case .alert: "alert"
        case .sound: "sound"
        case .choice: "choice"
        }
    }

    /// A composed notification: checked, with its request and its Swift.
    struct Composition {
        var description: NotificationDescription
        var notification: any PushNotification
        var target: Target
        var connector: AuthenticationMethod
        var request: APNsRequest
        var swift: String
        /// The destination to send it to, when one was named.
        var send: String?

        enum Target {
            case device(Device)
            case channel(BroadcastChannel)
        }

        /// The answer's JSON: the request as the connector writes it (a token connection adds
        /// `authorization`), the Swift, and the description's fields as read.
        var object: [String: Any] {
            var headers = request.headers.map { [$0.name, $0.value] }
            if connector == .token {
                headers.insert(["authorization", "bearer <the connector's provider token>"], at: 0)
            }
            return [
                "request": [
                    "method": request.method.rawValue, "path": request.path, "headers": headers,
                    "body": request.bodyText, "size": request.body.count,
                    "text": APNsRequest.text(
                        method: request.method.rawValue, path: request.path,
                        headers: headers.map { APNsRequest.Header(name: $0[0], value: $0[1]) }, body: request.bodyText),
                ],
                "swift": swift,
                "push-type": description.pushType,
                "connector": connector.rawValue,
            ]
        }
    }

    /// The top-level fields of a compose request.
    static let requestFields: Set<String> = ["notification", "device", "channel", "connector", "send"]

    /// Reads and checks a compose request:
    /// `{"notification": {…}, "device": "<hex>" | "channel": "<id>", "connector"?: "token" | "certificate", "send"?: "<destination>"}`.
    ///
    /// - Parameter now: A Live Activity's `timestamp` when none is given: written into the
    ///   description, so that the Swift makes the same bytes.
    static func compose(_ body: [UInt8], now: Date) throws(ComposeProblem) -> Composition {
        let fields: [String: JSONValue]
        do { fields = try JSONValue.object(body) } catch { throw ComposeProblem(400, error) }
        for key in fields.keys.sorted() where !requestFields.contains(key) {
            throw ComposeProblem(
                400, field: key,
                "is not a field of a compose request; give notification, device or channel, connector and send")
        }
        guard case .object(var notificationFields)? = fields["notification"] else {
            throw ComposeProblem(
                400, field: "notification",
                #"give the notification as a JSON object of the push gateway's fields, e.g. {"push-type": "alert", "bundle-id": "com.example.app", "alert": {"title": "Hello"}}"#
            )
        }
        if notificationFields["push-type"] == .string("liveactivity"), notificationFields["timestamp"] == nil {
            notificationFields["timestamp"] = .integer(Int64(now.timeIntervalSince1970))
        }
        var description: NotificationDescription
        do {
            description = try NotificationDescription(
                json: notificationFields,
                unknownField: "is not a notification field; GET /api/push-types lists each push type's fields")
        } catch {
            throw ComposeProblem(422, error)
        }
        let name: PushType.Name
        do { name = try description.checkedPushType() } catch { throw ComposeProblem(422, JSONProblem(error)) }
        let notification: any PushNotification
        do { notification = try description.notification(now: now) } catch {
            throw ComposeProblem(422, JSONProblem(error))
        }
        let reader = JSONFieldReader(fields: fields)
        let connector = try connectorKind(reader, name)
        let send: String?
        do { send = try reader.string("send") } catch { throw ComposeProblem(400, error) }
        let (target, swiftTarget) = try target(reader, name, app: description.app ?? "")
        let request: APNsRequest
        do {
            switch target {
            case .device(let device):
                request = try notification.validatedRequest(to: device)
            case .channel(let channel):
                guard let broadcast = notification as? any BroadcastDeliverable else {
                    throw ComposeProblem(
                        422, field: "channel",
                        "a broadcast channel takes a liveactivity update or end (a start goes to a device's push-to-start token); send this one to a device"
                    )
                }
                request = try broadcast.validatedRequest(to: channel)
            }
            try request.checkRules(for: connector)
        } catch let problem as ComposeProblem {
            throw problem
        } catch let error as APNsValidationError {
            var field: String?
            switch error {
            case .authenticationNotAllowed: field = "connector"
            case .invalidAccessoryField(let member): field = NotificationField(accessoryMember: member)?.rawValue
            default: break
            }
            throw ComposeProblem(422, field: field, error.description)
        } catch {
            throw ComposeProblem(422, "\(error)")
        }
        return Composition(
            description: description, notification: notification, target: target, connector: connector,
            request: request, swift: description.swiftSource(to: swiftTarget, now: now), send: send)
    }

    /// `connector`: a kind the push type accepts; by default its first (token before certificate).
    private static func connectorKind(
        _ reader: JSONFieldReader, _ name: PushType.Name
    ) throws(ComposeProblem) -> AuthenticationMethod {
        let allowed = name.pushType.authentication
        let text: String?
        do { text = try reader.string("connector") } catch { throw ComposeProblem(400, error) }
        guard let text else {
            return allowed.contains(.token) ? .token : .certificate
        }
        guard let method = AuthenticationMethod(rawValue: text) else {
            throw ComposeProblem(400, field: "connector", "\(text) is not a connector kind; give token or certificate")
        }
        guard allowed.contains(method) else {
            throw ComposeProblem(
                422, field: "connector",
                APNsValidationError.authenticationNotAllowed(pushType: name.pushType, method: method).description)
        }
        return method
    }

    /// `device` or `channel`, checked.
    private static func target(
        _ reader: JSONFieldReader, _ name: PushType.Name, app: String
    ) throws(ComposeProblem) -> (Composition.Target, NotificationDescription.SwiftTarget) {
        let device: String?
        let channel: String?
        do {
            device = try reader.string("device")
            channel = try reader.string("channel")
        } catch {
            throw ComposeProblem(400, error)
        }
        switch (device, channel) {
        case (let token?, nil):
            do { return (.device(try Device(token: token)), .device(token: token)) } catch {
                throw ComposeProblem(422, field: "device", error.description)
            }
        case (nil, let id?):
            guard name.pushType.maximumBroadcastPayloadSize != nil else {
                throw ComposeProblem(
                    422, field: "channel", "\(name.rawValue) cannot be broadcast; only liveactivity goes to a channel")
            }
            do { return (.channel(try BroadcastChannel(id: id, bundleID: app)), .channel(id: id)) } catch {
                throw ComposeProblem(422, field: "channel", error.description)
            }
        case (nil, nil):
            throw ComposeProblem(
                400, field: "device", "give a device token (POST /api/devices makes one) or a broadcast channel id")
        case (_?, _?):
            throw ComposeProblem(400, field: "channel", "give device or channel, not both")
        }
    }

    /// Sends `composition` through `connector` and says what came back: APNs' answer (a success or
    /// a rejection with its reason), or why nothing came back.
    static func send(_ composition: Composition, via connector: AnyConnector) async -> [String: Any] {
        do throws(APNsError) {
            let response: APNsResponse
            switch composition.target {
            case .device(let device):
                response = try await APNs.send(composition.notification, via: connector, to: device)
            case .channel(let channel):
                // compose() made a channel target only for a broadcastable notification.
                guard let broadcast = composition.notification as? any BroadcastDeliverable else {
                    return ["error": "this notification cannot be broadcast"]
                }
                response = try await APNs.send(broadcast, via: connector, to: channel)
            }
            var answer: [String: Any] = ["status": response.status]
            if let id = response.apnsID { answer["apns-id"] = id.description }
            if let unique = response.uniqueID { answer["apns-unique-id"] = unique }
            return answer
        } catch {
            if case .rejected(let rejection) = error {
                var answer: [String: Any] = ["status": rejection.status, "detail": error.description]
                if let reason = rejection.reason { answer["reason"] = reason.rawValue }
                if let timestamp = rejection.timestamp {
                    answer["timestamp"] = APNsRejection.millisecondsSince1970(timestamp)
                }
                if let id = rejection.apnsID { answer["apns-id"] = id.description }
                return answer
            }
            return ["error": error.description]
        }
    }
}

/// Why a compose request was refused: 400 for a request the API cannot read, 422 for a
/// notification the library's rules refuse; the field at fault and what to do.
struct ComposeProblem: Error {
    let status: Int
    let field: String?
    let message: String

    init(_ status: Int, field: String? = nil, _ message: String) {
        self.status = status
        self.field = field
        self.message = message
    }

    init(_ status: Int, _ problem: JSONProblem) {
        self.init(status, field: problem.field, problem.message)
    }
}
