import Foundation

extension MockAPNsServer {
    /// A way the server misbehaves on purpose, as networks and APNs front ends do, so tests can
    /// prove what a client concludes. Set with ``MockAPNsServer/inject(_:connections:requests:)``.
    ///
    /// "Processed" means what APNs would have done: the request was complete and accepted for
    /// delivery, and ``MockAPNsServer/processedCount(apnsID:)`` counts it.
    public enum Fault: Sendable, Hashable, CustomStringConvertible {
        /// Processes requests without answering; after `requests` on a connection, resets it (TCP RST).
        case resetAfterProcessing(requests: Int)
        /// Processes requests without answering; after `requests` on a connection, closes it (TLS
        /// close and TCP FIN).
        case closeAfterProcessing(requests: Int)
        /// Processes every request and never answers; a connection opened with this fault keeps it
        /// after the server is healed, like a peer that went away without closing.
        case neverAnswer
        /// Answers the first `requests` requests on a connection, then processes every later one
        /// without answering, and keeps doing so after the server is healed: a peer that went
        /// silent mid-stream while answers were still arriving.
        case neverAnswerAfter(requests: Int)
        /// Answers while requests keep coming; once a connection has gone `idle` without a request
        /// (counted from its last request, or from its opening), it processes every later request
        /// without answering, and keeps doing so after the server is healed: the TCP connection stays
        /// open and nothing is answered, as APNs has been seen to do with a connection left idle.
        case silentAfterIdle(Duration)
        /// Processes every request and answers after `delay`.
        case delay(Duration)
        /// Resets every stream with this HTTP/2 error code before processing it (7 is
        /// REFUSED_STREAM, which promises the request was not processed).
        case resetStreams(errorCode: UInt32)
        /// Processes every request, then resets its stream with this HTTP/2 error code instead of
        /// answering (2 is INTERNAL_ERROR).
        case resetStreamsAfterProcessing(errorCode: UInt32)
        /// After `requests` streams on a connection, sends GOAWAY with `errorCode` and `debugData`
        /// and a last-stream-id `lowerBy` streams below the newest one: those streams and any later
        /// are refused, never processed.
        case goAway(afterRequests: Int, errorCode: UInt32, debugData: String, lowerBy: Int)
        /// Answers every request with `status`, an optional `Retry-After` and `body` (not APNs' JSON
        /// unless you make it so), without processing it.
        case respond(status: Int, retryAfter: Int?, body: String)
        /// Accepts the TCP connection and never goes on with its TLS handshake, as an overloaded
        /// front end or a black-holing middlebox does; the client's connect timeout ends it.
        case stallHandshake
        /// Acts as if each connection's first push had been signed with another key: APNs ties a
        /// connection to the key of its first push and answers a token of any other key
        /// `403 UnrelatedKeyIdInToken`, so every token request on the connection is refused so.
        /// Apple's remedy, and the token connector's: a new connection.
        case tiedToAnotherKey

        public var description: String {
            switch self {
            case .resetAfterProcessing(let n): return "reset after processing \(n)"
            case .closeAfterProcessing(let n): return "close after processing \(n)"
            case .neverAnswer: return "never answer"
            case .neverAnswerAfter(let n): return "never answer after \(n)"
            case .silentAfterIdle(let idle): return "silent after \(idle) idle"
            case .delay(let delay): return "delay \(delay)"
            case .resetStreams(let code): return "RST_STREAM \(code)"
            case .resetStreamsAfterProcessing(let code): return "RST_STREAM \(code) after processing"
            case .goAway(let n, let code, _, let lower):
                return "GOAWAY \(code) after \(n), last-stream-id lower by \(lower)"
            case .respond(let status, let retryAfter, _):
                return "\(status) retry-after \(retryAfter.map(String.init) ?? "-")"
            case .stallHandshake: return "stall the TLS handshake"
            case .tiedToAnotherKey: return "tied to another key"
            }
        }
    }

}

extension MockAPNsServer.Fault {
    /// Reads a fault from its command-line form (`apns mock-server --fault …`):
    /// `reset-after:N`, `close-after:N`, `never-answer`, `never-answer-after:N`,
    /// `silent-after-idle:MILLISECONDS` (at most a day), `stall-handshake`, `unrelated-key`,
    /// `delay:MILLISECONDS` (at most a day),
    /// `rst-stream:CODE`, `rst-stream-after-processing:CODE`, `goaway:AFTER:CODE:LOWER-BY[:DEBUG-DATA]`,
    /// `status:CODE[:RETRY-AFTER-SECONDS]` (the body is then `{"reason":"ServiceUnavailable"}` for
    /// 503, `{"reason":"TooManyRequests"}` for 429, `{"reason":"InternalServerError"}` for 500, and
    /// an HTML page otherwise). Returns nil for anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
        func number(_ index: Int) -> Int? {
            index < parts.count ? Int(parts[index]).flatMap { $0 >= 0 ? $0 : nil } : nil
        }
        switch (parts[0], parts.count) {
        case ("reset-after", 2):
            guard let n = number(1), n > 0 else { return nil }; self = .resetAfterProcessing(requests: n)
        case ("close-after", 2):
            guard let n = number(1), n > 0 else { return nil }; self = .closeAfterProcessing(requests: n)
        case ("never-answer", 1): self = .neverAnswer
        case ("never-answer-after", 2):
            guard let n = number(1) else { return nil }; self = .neverAnswerAfter(requests: n)
        case ("silent-after-idle", 2):
            guard let ms = number(1), ms <= 86_400_000 else { return nil }; self = .silentAfterIdle(.milliseconds(ms))
        case ("stall-handshake", 1): self = .stallHandshake
        case ("unrelated-key", 1): self = .tiedToAnotherKey
        case ("delay", 2):
            // At most a day: a longer delay is never answered in a test, and would not fit NIO's timer.
            guard let ms = number(1), ms <= 86_400_000 else { return nil }; self = .delay(.milliseconds(ms))
        case ("rst-stream", 2):
            guard let code = number(1) else { return nil }; self = .resetStreams(errorCode: UInt32(clamping: code))
        case ("rst-stream-after-processing", 2):
            guard let code = number(1) else { return nil }
            self = .resetStreamsAfterProcessing(errorCode: UInt32(clamping: code))
        case ("goaway", 4), ("goaway", 5):
            guard let after = number(1), after > 0, let code = number(2), let lower = number(3) else { return nil }
            self = .goAway(
                afterRequests: after, errorCode: UInt32(clamping: code), debugData: parts.count == 5 ? parts[4] : "",
                lowerBy: lower)
        case ("status", 2), ("status", 3):
            guard let status = number(1), (100...599).contains(status) else { return nil }
            let retryAfter = parts.count == 3 ? number(2) : nil
            if parts.count == 3 && retryAfter == nil { return nil }
            let body: String
            switch status {
            case 429: body = #"{"reason":"TooManyRequests"}"#
            case 500: body = #"{"reason":"InternalServerError"}"#
            case 503: body = #"{"reason":"ServiceUnavailable"}"#
            default: body = "<html><body><h1>\(status)</h1></body></html>"
            }
            self = .respond(status: status, retryAfter: retryAfter, body: body)
        default:
            return nil
        }
    }
}
