#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What came back over HTTP/2 for one request, before interpretation. Connectors return this;
/// ``APNsResponse/init(interpreting:)`` turns it into an accepted response or an ``APNsRejection``.
public struct HTTPResponse: Hashable, Sendable {
    public var status: Int
    /// Lowercase names, in the order received.
    public var headers: [APNsRequest.Header]
    public var body: [UInt8]

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

/// APNs accepted the notification (APNs reference §9).
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

    public init(status: Int, apnsID: APNsID? = nil, uniqueID: String? = nil, requestID: String? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.requestID = requestID
    }

    /// Reads a raw response: 2xx becomes an ``APNsResponse``, anything else throws the
    /// ``APNsRejection`` it carries.
    public init(interpreting response: HTTPResponse) throws(APNsRejection) {
        let apnsID = response[header: "apns-id"].flatMap(APNsID.init)
        guard (200..<300).contains(response.status) else {
            throw APNsRejection(status: response.status, body: response.body, apnsID: apnsID)
        }
        self.init(
            status: response.status, apnsID: apnsID, uniqueID: response[header: "apns-unique-id"],
            requestID: response[header: "apns-request-id"])
    }

    public var description: String {
        var parts = ["\(status)"]
        if let apnsID { parts.append("apns-id \(apnsID)") }
        if let uniqueID { parts.append("apns-unique-id \(uniqueID)") }
        if let requestID { parts.append("apns-request-id \(requestID)") }
        return parts.joined(separator: " ")
    }
}

/// APNs refused the request: the status, Apple's reason, the notification's apns-id and, for 410,
/// when APNs last confirmed the token was no longer valid (APNs reference §9).
///
/// ```swift
/// do {
///     try await send(notification, via: connector, to: device)
/// } catch let rejection as APNsRejection where rejection.reason == .unregistered {
///     database.remove(device, unlessRegisteredAfter: rejection.timestamp)
/// }
/// ```
public struct APNsRejection: Error, Hashable, Sendable, CustomStringConvertible {
    public var status: Int
    public var reason: Reason
    public var apnsID: APNsID?
    /// For 410: the last time APNs confirmed the token was invalid for the topic (the body's
    /// milliseconds, converted).
    public var timestamp: Date?

    public init(status: Int, reason: Reason, apnsID: APNsID? = nil, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.timestamp = timestamp
    }

    /// Decodes Apple's JSON error body `{"reason":…,"timestamp":…}`. A body that is not JSON, or has
    /// no reason, gives a reason that says so rather than failing.
    public init(status: Int, body: [UInt8], apnsID: APNsID? = nil) {
        struct Body: Decodable {
            var reason: String?
            var timestamp: Double?
        }
        let decoded = try? JSONDecoder().decode(Body.self, from: Data(body))
        self.status = status
        self.apnsID = apnsID
        if let reason = decoded?.reason {
            self.reason = Reason(rawValue: reason)
        } else {
            self.reason = Reason(rawValue: body.isEmpty ? "HTTP \(status) without a body" : "HTTP \(status): " + String(decoding: body.prefix(200), as: UTF8.self))
        }
        self.timestamp = decoded?.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
    }

    public var description: String {
        var text = "APNs rejected the request: \(status) \(reason.rawValue)"
        if let apnsID { text += " (apns-id \(apnsID))" }
        if let timestamp { text += ", token invalid since \(timestamp)" }
        return text + ". " + reason.advice
    }
}
