import APNs
import Vapor

/// A route that lets an `APNsError` through answers with a status that says whose fault it was,
/// and a reason that names no credential, key path or host:
///
/// | error | status |
/// |---|---|
/// | `.validation` (the notification breaks APNs' rules; nothing sent) | 400 |
/// | `.rejected` 400 `BadDeviceToken`, `DeviceTokenNotForTopic`; 410 `Unregistered` | 400; 410 |
/// | `.rejected` 429 `TooManyRequests`, 500, 503 | 503, with APNs' `Retry-After` when it sent one |
/// | `.rejected`, any other (403 auth, 413 size, …) | 502 |
/// | `.transport` timeout | 504 |
/// | `.transport`, any other | 503 |
/// | `.credential`, `.bulkResultsAlreadyIterated` (the server's own set-up) | 500 |
///
/// ```swift
/// app.post("notify") { req async throws -> HTTPStatus in
///     try await req.apns.send(notification, to: device)   // an APNsError becomes its status
///     return .accepted
/// }
/// ```
///
/// The reason of a transport failure says whether the push may have been delivered, so a client
/// knows whether trying again could show it twice. Catch `APNsError` in the route to answer
/// otherwise.
extension APNsError: @retroactive AbortError {
    public var status: HTTPResponseStatus {
        switch self {
        case .validation:
            return .badRequest
        case .rejected(let rejection):
            switch rejection.status {
            case 400 where rejection.reason == .badDeviceToken || rejection.reason == .deviceTokenNotForTopic:
                return .badRequest
            case 410: return .gone
            case 429, 500, 503: return .serviceUnavailable
            default: return .badGateway
            }
        case .transport(let failure):
            return failure.isTimeout ? .gatewayTimeout : .serviceUnavailable
        case .credential, .bulkResultsAlreadyIterated:
            return .internalServerError
        }
    }

    public var reason: String {
        switch self {
        case .validation(let error):
            // What is wrong with the notification and how to fix it; it carries no secret.
            return error.description
        case .rejected(let rejection):
            return "APNs refused the push: \(rejection.status) \(rejection.reason?.rawValue ?? "(no reason)")"
        case .transport(let failure):
            let delivery =
                failure.delivery == .notSent
                ? "it was not sent and may be sent again"
                : "it may have been delivered, so sending it again may show it twice"
            return "no answer from APNs (\(failure.kind)): \(delivery)"
        case .credential:
            return "push notifications are misconfigured on this server"
        case .bulkResultsAlreadyIterated:
            return "push notifications failed on this server"
        }
    }

    public var headers: HTTPHeaders {
        guard case .rejected(let rejection) = self, let retryAfter = rejection.retryAfter,
            status == .serviceUnavailable
        else { return [:] }
        return ["Retry-After": String(max(1, retryAfter.components.seconds))]
    }
}

/// A device token or notification refused before anything was sent (`Device(token:)` in a route,
/// say) is the HTTP client's mistake: 400, with what is wrong and how to fix it.
extension APNsValidationError: @retroactive AbortError {
    public var status: HTTPResponseStatus { .badRequest }
    public var reason: String { description }
}
