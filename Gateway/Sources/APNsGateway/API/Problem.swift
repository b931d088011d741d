@_spi(Description) import APNs
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answer as `application/problem+json` (RFC 9457): the status, its title, a detail that
/// says what is wrong and how to fix it, and the request field at fault when there is one.
///
/// Thread safety: a value type; `Sendable`.
package struct Problem: HTTPResponseError, Sendable, Equatable {
    package let status: HTTPResponse.Status
    package let detail: String
    package let field: String?
    /// Seconds to wait before trying again (429, 503).
    package let retryAfter: Int?
    /// The methods the path answers (405).
    package let allow: String?

    package init(
        _ status: HTTPResponse.Status, _ detail: String, field: String? = nil, retryAfter: Int? = nil,
        allow: String? = nil
    ) {
        self.status = status
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
        self.allow = allow
    }

    /// A 400 for a request the notification rules refuse; 413 for a payload over its limit, 403
    /// for a push type the gateway's credential cannot send, 422 for a rule about time.
    init(_ problem: RequestProblem) {
        let status: HTTPResponse.Status
        switch problem.kind {
        case .invalid: status = .badRequest
        case .tooLarge: status = .contentTooLarge
        case .notForThisGateway: status = .forbidden
        case .unprocessable: status = .unprocessableContent
        }
        self.init(status, problem.description, field: problem.field)
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let allow { headers[.allow] = allow }
        // RFC 9110 §11.6.1: a 401 says how to authenticate (RFC 6750's Bearer scheme).
        if status == .unauthorized { headers[.wwwAuthenticate] = #"Bearer realm="apns-gateway""# }
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: JSONValue.object(members).compactText)))
    }

    /// The problem document's members (also an item's `problem` in a batch's answer).
    var members: [String: JSONValue] {
        var members: [String: JSONValue] = [
            "type": .string("about:blank"), "title": .string(status.reasonPhrase),
            "status": .integer(Int64(status.code)),
            "detail": .string(detail),
        ]
        if let field { members["field"] = .string(field) }
        return members
    }
}

/// A JSON answer.
func jsonResponse(_ status: HTTPResponse.Status, _ value: JSONValue, headers extra: HTTPFields = [:]) -> Response {
    var headers: HTTPFields = [.contentType: "application/json"]
    headers.append(contentsOf: extra)
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: value.compactText)))
}
