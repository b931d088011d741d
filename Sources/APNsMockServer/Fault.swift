import Foundation

extension MockAPNsServer {
    /// A way the server misbehaves on purpose, as networks and APNs front ends do, so tests can
    /// prove what a client concludes. Set with ``MockAPNsServer/inject(_:connections:)``.
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

        public var description: String {
            switch self {
            case .resetAfterProcessing(let n): return "reset after processing \(n)"
            case .closeAfterProcessing(let n): return "close after processing \(n)"
            case .neverAnswer: return "never answer"
            case .delay(let delay): return "delay \(delay)"
            case .resetStreams(let code): return "RST_STREAM \(code)"
            case .resetStreamsAfterProcessing(let code): return "RST_STREAM \(code) after processing"
            case .goAway(let n, let code, _, let lower): return "GOAWAY \(code) after \(n), last-stream-id lower by \(lower)"
            case .respond(let status, let retryAfter, _): return "\(status) retry-after \(retryAfter.map(String.init) ?? "-")"
            }
        }
    }
}
