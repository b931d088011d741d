#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What came back over HTTP/2 for one request, before interpretation. Connectors return this;
/// ``APNsResponse/init(interpreting:)`` turns it into an accepted response or an ``APNsRejection``.
public struct APNsHTTPResponse: Hashable, Sendable {
    /// The HTTP status.
    public var status: Int
    /// Lowercase names, in the order received.
    public var headers: [APNsRequest.Header]
    /// The response body.
    public var body: [UInt8]

    /// A response as a connector received it (or as a test scripts it).
    public init(status: Int, headers: [APNsRequest.Header], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (lowercase), if any.
    public subscript(header name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }
}

/// APNs accepted the notification (<doc:ProtocolReference#Responses>).
public struct APNsResponse: Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status: 200 for pushes and broadcasts, 201 or 204 for some channel operations.
    public var status: Int
    /// The notification's `apns-id` (yours, or the one APNs assigned).
    public var apnsID: APNsID?
    /// `apns-unique-id`, sent by the sandbox (and for broadcasts): look the push up in Apple's
    /// delivery log with it.
    public var uniqueID: String?
    /// `apns-request-id`, for broadcast and channel requests.
    public var requestID: String?

    /// An acceptance; connectors' answers become one through ``init(interpreting:)``.
    public init(status: Int, apnsID: APNsID? = nil, uniqueID: String? = nil, requestID: String? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.requestID = requestID
    }

    /// Reads a raw response: 2xx becomes an ``APNsResponse``, anything else throws the
    /// ``APNsRejection`` it carries.
    public init(interpreting response: APNsHTTPResponse) throws(APNsRejection) {
        guard (200..<300).contains(response.status) else { throw APNsRejection(response) }
        let apnsID = response[header: .apnsID].flatMap(APNsID.init)
        self.init(
            status: response.status, apnsID: apnsID, uniqueID: response[header: .apnsUniqueID],
            requestID: response[header: .apnsRequestID])
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        var parts = ["\(status)"]
        if let apnsID { parts.append("apns-id \(apnsID)") }
        if let uniqueID { parts.append("apns-unique-id \(uniqueID)") }
        if let requestID { parts.append("apns-request-id \(requestID)") }
        return parts.joined(separator: " ")
    }
}

/// APNs refused the request: the status, Apple's reason, the notification's apns-id and, for 410,
/// when APNs last confirmed the token was no longer valid (<doc:ProtocolReference#Responses>).
///
/// ```swift
/// do {
///     try await send(notification, via: connector, to: device)
/// } catch .rejected(let rejection) where rejection.reason == .unregistered {
///     database.remove(device, unlessRegisteredAfter: rejection.timestamp)
/// }
/// ```
public struct APNsRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status APNs sent (400, 403, 404, 405, 410, 413, 429, 500, 503).
    public var status: Int
    /// Apple's reason, or nil when the body carried none (a proxy's HTML error page, an empty
    /// 5xx): then ``status`` and ``body`` are all there is.
    public var reason: Reason?
    /// The `apns-id` header value; nil lets APNs assign one (returned in the response).
    public var apnsID: APNsID?
    /// `apns-unique-id`, when APNs sent one (the sandbox does): look the push up in Apple's
    /// delivery log with it.
    public var uniqueID: String?
    /// For 410: the last time APNs confirmed the token was invalid for the topic (the body's
    /// milliseconds, converted).
    public var timestamp: Date?
    /// The `Retry-After` header (RFC 9110 §10.2.3, in seconds), when the server sent one.
    public var retryAfter: Duration?
    /// The response body as received (at most 4096 bytes are kept).
    public var body: [UInt8]

    /// A rejection from its parts; usually made by ``init(_:)`` from an answer.
    public init(
        status: Int, reason: Reason?, apnsID: APNsID? = nil, uniqueID: String? = nil, timestamp: Date? = nil,
        retryAfter: Duration? = nil, body: [UInt8] = []
    ) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.timestamp = timestamp
        self.retryAfter = retryAfter
        self.body = body
    }

    /// Apple's JSON error body, `{"reason":"Unregistered","timestamp":1700000000500}`: the timestamp
    /// (410 only) in integer milliseconds since 1970 (<doc:ProtocolReference#Responses>). The one writer of this
    /// format, for the mock server and the recording connector; ``init(status:body:apnsID:uniqueID:retryAfter:)``
    /// reads it.
    public static func body(reason: Reason, timestamp: Date? = nil) -> String {
        body(reason: reason, timestampMilliseconds: timestamp.map(millisecondsSince1970))
    }

    /// ``body(reason:timestamp:)`` with the timestamp already in milliseconds.
    public static func body(reason: Reason, timestampMilliseconds: Int64?) -> String {
        var json = #"{"reason":""# + reason.rawValue + "\""
        if let timestampMilliseconds { json += #","timestamp":"# + String(timestampMilliseconds) }
        return json + "}"
    }

    /// A timestamp as APNs writes it: whole milliseconds since 1970, rounded.
    public static func millisecondsSince1970(_ date: Date) -> Int64 {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, milliseconds > -9.2e18, milliseconds < 9.2e18 else { return 0 }
        return Int64(milliseconds)
    }

    /// Decodes Apple's JSON error body `{"reason":…,"timestamp":…}`. A body that is not JSON, or has
    /// no reason, leaves ``reason`` nil and keeps the bytes in ``body``.
    public init(status: Int, body: [UInt8], apnsID: APNsID? = nil, uniqueID: String? = nil, retryAfter: Duration? = nil)
    {
        struct Body: Decodable {
            var reason: String?
            var timestamp: Double?
        }
        let decoded = body.first == UInt8(ascii: "{") ? try? JSONDecoder().decode(Body.self, from: Data(body)) : nil
        self.init(
            status: status, reason: decoded?.reason.map(Reason.init(rawValue:)), apnsID: apnsID, uniqueID: uniqueID,
            timestamp: decoded?.timestamp.flatMap { $0.isFinite ? Date(timeIntervalSince1970: $0 / 1000) : nil },
            retryAfter: retryAfter, body: Array(body.prefix(4096)))
    }

    /// Reads a non-2xx response: reason and timestamp from the body, `apns-id`, `apns-unique-id`
    /// and `Retry-After` from the headers.
    public init(_ response: APNsHTTPResponse) {
        self.init(
            status: response.status, body: response.body, apnsID: response[header: .apnsID].flatMap(APNsID.init),
            uniqueID: response[header: .apnsUniqueID],
            retryAfter: response[header: .retryAfter].flatMap(APNsRejection.retryAfterSeconds))
    }

    /// ``body`` as UTF-8 text, for logs and tests.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// `Retry-After` as delay-seconds (APNs and proxies in front of it send seconds; an HTTP-date
    /// is not interpreted). Capped at one day.
    static func retryAfterSeconds(_ value: String) -> Duration? {
        guard let seconds = Int(value.filter { $0 != " " && $0 != "\t" }), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 86_400))
    }

    /// What to do about it: from Apple's reason when there is one, else from the status
    /// (429 later; 5xx with back-off; anything else never).
    public var retry: Reason.RetryAdvice {
        if let reason { return reason.retry }
        switch status {
        case 429: return .later
        case 500...599: return .withBackoff
        default: return .never
        }
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        var text = "APNs rejected the request: \(status)"
        if let reason {
            text += " \(reason.rawValue)"
        } else if body.isEmpty {
            text += " with no reason"
        } else {
            text += " with a body that is not APNs' JSON (\(body.count) bytes)"
        }
        if let apnsID { text += " (apns-id \(apnsID))" }
        if let timestamp { text += ", token invalid since \(timestamp)" }
        if let retryAfter { text += ", retry after \(retryAfter.components.seconds) s" }
        text += ". "
        if let reason { return text + reason.advice }
        switch retry {
        case .later: return text + "Slow down and retry later."
        case .withBackoff: return text + "A server-side failure: retry with back-off."
        default: return text + "Check the request and the host: this answer did not come from APNs' API."
        }
    }
}
