import APNs
import APNsMockServer

/// How the command prints requests: `apns send --dry-run`'s format, with the JWT redacted.
enum Output {
    /// `METHOD path`, one `name: value` line per header in the order sent, a blank line, the body.
    static func request(method: String, path: String, headers: [APNsRequest.Header], body: String) -> String {
        let shown = headers.map {
            $0.name == APNsRequest.Header.Name.authorization.rawValue
                ? APNsRequest.Header(.authorization, value: "bearer <JWT redacted>") : $0
        }
        return APNsRequest.text(method: method, path: path, headers: shown, body: body)
    }

    static func recorded(_ request: RecordedRequest) -> String {
        self.request(method: request.method, path: request.path, headers: request.headers, body: request.bodyText)
    }

    /// One device's outcome as one line of JSON (`apns send --json`): the target, then either the
    /// answer (`status`, `apns-id`, `reason` and `timestamp` when rejected) or the transport
    /// `error` with its `kind`, `delivery` and `message`.
    static func jsonLine(target: String, isChannel: Bool, result: Result<APNsResponse, APNsError>?) -> String {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key(isChannel ? "channel" : "token")
        writer.string(target)
        switch result {
        case .success(let response)?:
            writer.key("status")
            writer.int(response.status)
            if let id = response.apnsID {
                writer.key(APNsRequest.Header.Name.apnsID.rawValue)
                writer.string(id.description)
            }
            if let id = response.requestID {
                writer.key(APNsRequest.Header.Name.apnsRequestID.rawValue)
                writer.string(id)
            }
            if let id = response.uniqueID {
                writer.key(APNsRequest.Header.Name.apnsUniqueID.rawValue)
                writer.string(id)
            }
        case .failure(.rejected(let rejection))?:
            writer.key("status")
            writer.int(rejection.status)
            if let id = rejection.apnsID {
                writer.key(APNsRequest.Header.Name.apnsID.rawValue)
                writer.string(id.description)
            }
            writer.key("reason")
            if let reason = rejection.reason { writer.string(reason.rawValue) } else { writer.null() }
            if let timestamp = rejection.timestamp {
                writer.key("timestamp")
                writer.int(Int64((timestamp.timeIntervalSince1970 * 1000).rounded()))
            }
        case .failure(let error)?:
            writer.key("error")
            writer.beginObject()
            writer.key("kind")
            switch error {
            case .transport(let failure):
                writer.string(failure.kind.rawValue)
                writer.key("delivery")
                writer.string(failure.delivery.rawValue)
            case .validation: writer.string("validation")
            case .credential: writer.string("credential")
            default: writer.string("other")
            }
            writer.key("message")
            writer.string(error.description)
            writer.endObject()
        case nil:
            writer.key("error")
            writer.null()
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
