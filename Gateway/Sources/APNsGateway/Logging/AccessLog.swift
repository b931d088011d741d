import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// One line per request at `info` (`apns-gateway serve --access-log`): method, path, status,
/// duration, the caller's address, and the name of the API key that authenticated it — never the
/// key, the `Authorization` header, a query or a body, so never a token or a secret.
///
/// Outermost, so it sees every answer's status, a refusal's included.
///
/// Thread safety: a value type; `Sendable`.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let logger: Logger
    let clock: any GatewayClock

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = clock.now
        let note = AccessLogNote()
        do {
            let response = try await AccessLogNote.$current.withValue(note) { try await next(request, context) }
            log(request, context: context, status: response.status, since: start, note: note)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            log(request, context: context, status: status, since: start, note: note)
            throw error
        }
    }

    private func log(
        _ request: Request, context: Context, status: HTTPResponse.Status, since start: Date, note: AccessLogNote
    ) {
        var metadata: Logger.Metadata = [
            "http.request.method": "\(request.method.rawValue)", "url.path": "\(request.uri.path)",
            "http.response.status_code": "\(status.code)",
            "duration_ms": "\(Int((clock.now.timeIntervalSince(start) * 1000).rounded()))",
            "client.address": "\(context.caller)",
        ]
        if let key = note.keyName.withLock({ $0 }) { metadata["api_key.name"] = "\(key)" }
        logger.info("request", metadata: metadata)
    }
}

/// What the handler learns of a request for its access-log line: the API key's name, once
/// authenticated. Bound by ``AccessLogMiddleware`` for the request's task.
///
/// Thread safety: a `Mutex` guards the name.
final class AccessLogNote: Sendable {
    @TaskLocal static var current: AccessLogNote?
    let keyName = Mutex<String?>(nil)
}
