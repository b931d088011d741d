import APNs
import Foundation

/// A connector for unit tests: it records every request exactly as `send` built it and answers
/// with a scripted response, without a network or credentials.
///
/// It is typed by the authentication it stands in for, so the compile-time rules still hold:
/// a ``TokenRecordingConnector`` cannot send MDM, a ``CertificateRecordingConnector`` cannot send
/// widgets.
///
/// ```swift
/// let connector = TokenRecordingConnector()
/// try await send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, via: connector, to: device)
/// #expect(connector.requests[0].bodyText == #"{"aps":{"alert":"Hi"}}"#)
/// #expect(connector.requests[0][header: .apnsTopic] == "com.example.app")
///
/// let failing = TokenRecordingConnector { _ in .rejected(.unregistered, timestamp: Date()) }
/// ```
///
/// Thread safety: `Sendable`; requests from concurrent tasks are recorded in completion order.
public final class RecordingConnector<Authentication: FixedAuthenticationKind>: Connector {
    private let respond: @Sendable (APNsRequest) -> APNsHTTPResponse
    private let recorded = Locked<[APNsRequest]>([])

    /// - Parameter respond: The answer to each request; by default 200 with an `apns-id` (the
    ///   request's own, or a fixed one) and an `apns-unique-id`.
    public init(
        respond: @escaping @Sendable (APNsRequest) -> APNsHTTPResponse = { .accepted(apnsID: $0[header: .apnsID]) }
    ) {
        self.respond = respond
    }

    /// Records `request` and answers it. Checks the request's rules first, as the shipped connectors do: a request production would
    /// refuse (an MDM push through a token connector, a Live Activity start without an alert)
    /// throws the same `APNsError.validation` here and is not recorded.
    public func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
        try Task.checkCancellation()
        do { try request.checkRules(for: Authentication.method) } catch { throw APNsError.validation(error) }
        recorded.withLock { $0.append(request) }
        return respond(request)
    }

    /// Every request received, in order.
    public var requests: [APNsRequest] { recorded.withLock { $0 } }

    /// Forgets the recorded requests.
    public func reset() { recorded.withLock { $0.removeAll() } }
}

/// Stands in for a `TokenConnector` (in `APNs`).
public typealias TokenRecordingConnector = RecordingConnector<TokenAuthentication>
/// Stands in for a `CertificateConnector` (in `APNs`).
public typealias CertificateRecordingConnector = RecordingConnector<CertificateAuthentication>

extension APNsHTTPResponse {
    /// The apns-id a scripted success reports when the request carried none.
    public static let scriptedAPNsID = "00000000-0000-4000-8000-000000000000"

    /// 200, as APNs answers an accepted push.
    public static func accepted(
        apnsID: String? = nil, uniqueID: String = "00000000-0000-4000-8000-000000000001"
    ) -> APNsHTTPResponse {
        APNsHTTPResponse(
            status: 200,
            headers: [
                .init(.apnsID, value: apnsID ?? scriptedAPNsID),
                .init(.apnsUniqueID, value: uniqueID),
            ])
    }

    /// A rejection with Apple's JSON body; the status defaults to the one Apple sends with `reason`.
    public static func rejected(
        _ reason: APNsRejection.Reason, status: Int? = nil, timestamp: Date? = nil, apnsID: String? = nil
    ) -> APNsHTTPResponse {
        let body = APNsRejection.body(reason: reason, timestamp: timestamp)
        return APNsHTTPResponse(
            status: status ?? reason.defaultStatus,
            headers: [.init(.apnsID, value: apnsID ?? scriptedAPNsID)],
            body: Array(body.utf8))
    }
}
