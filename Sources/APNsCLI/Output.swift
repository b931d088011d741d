import APNs
import APNsMockServer

/// How the command prints requests: `apns send --dry-run`'s format, with the JWT redacted.
enum Output {
    /// `METHOD path`, one `name: value` line per header in the order sent, a blank line, the body.
    static func request(method: String, path: String, headers: [APNsRequest.Header], body: String) -> String {
        var lines = ["\(method) \(path)"]
        lines += headers.map { $0.name == "authorization" ? "authorization: bearer <JWT redacted>" : $0.description }
        lines.append("")
        lines.append(body)
        return lines.joined(separator: "\n")
    }

    static func recorded(_ request: RecordedRequest) -> String {
        self.request(method: request.method, path: request.path, headers: request.headers, body: request.bodyText)
    }
}
