import HTTPTypes
import Hummingbird
import Logging
import Metrics

/// Makes every error a request meets an `application/problem+json` answer, and counts it
/// (`apns_gateway_requests_refused_total{status}`): a ``Problem`` as it is, Hummingbird's own
/// errors (an unknown path's 404) with their status, and anything else, which is the queue's
/// database failing, as a 503 with `Retry-After` when trying again can help
/// (``DatabaseFailure/Kind/unavailable``) or a 500 when it cannot; each of these is logged at
/// `error` with what the database said.
///
/// A `POST /v1/notifications` that met the database may or may not have stored its notification
/// (a connection lost during the commit leaves no way to tell): its answer says so, and that the
/// same request with the same `Idempotency-Key` stores it at most once.
///
/// Thread safety: a value type; `Sendable`.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    /// The `Retry-After` of a 503 for an unavailable database, in seconds.
    let retryAfter: Int
    let metricsFactory: any MetricsFactory

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let problem = self.problem(for: error, request: request, logger: context.logger)
            Counter(
                label: "apns_gateway_requests_refused_total", dimensions: [("status", String(problem.status.code))],
                factory: metricsFactory
            )
            .increment()
            throw problem
        }
    }

    func problem(for error: any Error, request: Request, logger: Logger) -> Problem {
        switch error {
        case let problem as Problem:
            return problem
        case let error as HTTPError:
            let detail =
                error.status == .notFound
                ? "no such path: the gateway serves /v1/notifications, /v1/notification-batches, /v1/unregistered, /healthz, /readyz and /metrics"
                : error.body ?? error.status.reasonPhrase
            return Problem(error.status, detail)
        default:
            let failure = DatabaseFailure(error)
            logger.error(
                "a request met a database failure",
                metadata: [
                    "method": "\(request.method)", "path": "\(request.uri.path)", "kind": "\(failure.kind)",
                    "error": "\(failure)",
                ])
            let code = failure.code.map { " (\($0))" } ?? ""
            let outcome =
                request.method == .post
                    && (request.uri.path == "/v1/notifications" || request.uri.path == "/v1/notification-batches")
                ? "The notification may or may not have been queued: the same request with the same Idempotency-Key queues it at most once."
                : "The request is safe to repeat as it is."
            switch failure.kind {
            case .unavailable:
                return Problem(
                    .serviceUnavailable,
                    "the queue's database is unavailable\(code); try again after Retry-After. \(outcome)",
                    retryAfter: retryAfter)
            case .failed:
                return Problem(
                    .internalServerError,
                    "the queue's database failed\(code) in a way trying again will not mend; the gateway's log says more. \(outcome)"
                )
            }
        }
    }
}
