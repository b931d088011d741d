import APNs
import APNsMockServer

/// How the command prints requests: `apns send --dry-run`'s format, with the JWT redacted.
enum Output {
    /// `METHOD path`, one `name: value` line per header in the order sent, a blank line, the body.
    static func request(method: String, path: String, headers: [APNsRequest.Header], body: String) -> String {
        let shown = headers.map { $0.name == "authorization" ? APNsRequest.Header(name: "authorization", value: "bearer <JWT redacted>") : $0 }
        return APNsRequest.text(method: method, path: path, headers: shown, body: body)
    }

    static func recorded(_ request: RecordedRequest) -> String {
        self.request(method: request.method, path: request.path, headers: request.headers, body: request.bodyText)
    }
}
