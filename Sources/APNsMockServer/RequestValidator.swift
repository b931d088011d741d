import APNsCore
import Foundation

/// Decides what APNs would answer to one raw request (APNs reference §2–§9).
///
/// It reads the facts of each push type (topic suffix, priorities, size, authentication) from
/// `APNsCore`'s ``PushType`` values, but parses the request itself from the raw method, path,
/// headers and body, independently of how the client built it.
struct RequestValidator {
    struct Incoming {
        var method: String
        var path: String
        var headers: [APNsRequest.Header]
        var body: [UInt8]
        /// The common name of a verified client certificate, if the connection presented one.
        var clientCertificateName: String?
    }

    struct Verdict {
        var status: Int
        var reason: APNsRejection.Reason?
        var timestamp: Int64?
        var authentication: RecordedRequest.Authentication
        var apnsID: String?

        static func reject(_ reason: APNsRejection.Reason, _ auth: RecordedRequest.Authentication = .none, timestamp: Int64? = nil) -> Verdict {
            return Verdict(status: reason.defaultStatus, reason: reason, timestamp: timestamp, authentication: auth)
        }
    }

    /// The apns-* headers APNs reads; each may appear once.
    static let singleHeaders: Set<String> = [
        "authorization", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id", "apns-collapse-id",
    ]

    let state: ServerState

    func evaluate(_ request: Incoming) -> Verdict {
        // Path and method.
        let devicePrefix = "/3/device/"
        guard request.path.hasPrefix("/3/device") else { return .reject(.badPath) }
        guard request.method == "POST" else { return .reject(.methodNotAllowed) }
        let token = request.path.hasPrefix(devicePrefix) ? String(request.path.dropFirst(devicePrefix.count)) : ""
        guard !token.isEmpty else { return .reject(.missingDeviceToken) }
        guard token.utf8.count % 2 == 0, token.utf8.allSatisfy({ $0.isHexDigit }) else { return .reject(.badDeviceToken) }

        // Duplicate headers.
        var seen = Set<String>()
        for header in request.headers where RequestValidator.singleHeaders.contains(header.name) {
            guard seen.insert(header.name).inserted else { return .reject(.duplicateHeaders) }
        }
        func header(_ name: String) -> String? { request.headers.first(where: { $0.name == name })?.value }

        // Authentication: a client certificate on the connection, or a bearer token.
        var authentication = RecordedRequest.Authentication.none
        if let commonName = request.clientCertificateName {
            authentication = .certificate(commonName: commonName)
        } else {
            guard let authorization = header("authorization") else { return .reject(.missingProviderToken) }
            switch state.verifyToken(authorization) {
            case .valid(let teamID, let keyID, let issuedAt):
                authentication = .token(teamID: teamID, keyID: keyID, issuedAt: issuedAt)
            case .rejected(let reason):
                return .reject(reason)
            }
        }

        // Push type and the rules that follow from it.
        guard let pushTypeName = header("apns-push-type") else { return .reject(.invalidPushType, authentication) }
        guard let pushType = PushType(rawValue: pushTypeName) else { return .reject(.invalidPushType, authentication) }
        switch authentication {
        case .certificate where !pushType.authentication.contains(.certificate):
            return .reject(.badCertificate, authentication)
        case .token where !pushType.authentication.contains(.token):
            return .reject(.invalidProviderToken, authentication)
        default: break
        }

        // Topic.
        guard let topic = header("apns-topic"), !topic.isEmpty else { return .reject(.missingTopic, authentication) }
        let bundleID: String
        if let suffix = pushType.topicSuffix {
            guard topic.hasSuffix(suffix), topic.count > suffix.count else { return .reject(.badTopic, authentication) }
            bundleID = String(topic.dropLast(suffix.count))
            // What is left must be a bare bundle id, not another push type's topic.
            let otherSuffixes = PushType.allCases.compactMap(\.topicSuffix).filter { !$0.isEmpty }
            if otherSuffixes.contains(where: { bundleID.hasSuffix($0) }) { return .reject(.badTopic, authentication) }
        } else {
            guard topic.hasPrefix("com.apple.mgmt.") else { return .reject(.badTopic, authentication) }
            bundleID = topic
        }
        if case .certificate(let commonName) = authentication, let certified = RequestValidator.bundleID(fromCommonName: commonName),
            certified != bundleID
        {
            return .reject(.topicDisallowed, authentication)
        }
        if let allowed = state.configuration.allowedBundleIDs, !allowed.contains(bundleID), pushType != .mdm {
            return .reject(.topicDisallowed, authentication)
        }

        // Priority and expiration.
        if let value = header("apns-priority") {
            guard let priority = PushPriority(headerValue: value), pushType.allowedPriorities.contains(priority) else {
                return .reject(.badPriority, authentication)
            }
        } else if !pushType.allowedPriorities.contains(.immediate) {
            return .reject(.badPriority, authentication)  // omitted means 10
        }
        if let value = header("apns-expiration") {
            guard let seconds = Int(value), seconds >= 0 else { return .reject(.badExpirationDate, authentication) }
            if let required = pushType.requiredExpiration, seconds != required { return .reject(.badExpirationDate, authentication) }
        } else if pushType.requiredExpiration != nil {
            return .reject(.badExpirationDate, authentication)
        }

        // apns-id and collapse id.
        var apnsID = UUID().uuidString.lowercased()
        if let value = header("apns-id") {
            guard RequestValidator.isCanonicalUUID(value) else { return .reject(.badMessageId, authentication) }
            apnsID = value
        }
        if let value = header("apns-collapse-id") {
            guard !value.isEmpty, value.utf8.count <= 64 else { return .reject(.badCollapseId, authentication) }
        }

        // Payload.
        guard !request.body.isEmpty else { return .reject(.payloadEmpty, authentication) }
        guard request.body.count <= pushType.maximumPayloadSize else { return .reject(.payloadTooLarge, authentication) }
        guard let json = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return .reject(.badRequestPayload, authentication)
        }
        guard PayloadShape.isValid(json, for: pushType) else { return .reject(.badRequestPayload, authentication) }

        // Scripted answers for this device token.
        if let scripted = state.scriptedRejection(for: token) {
            var verdict = Verdict.reject(scripted.reason, authentication, timestamp: scripted.timestamp)
            verdict.status = scripted.status
            verdict.apnsID = apnsID
            return verdict
        }
        return Verdict(status: 200, reason: nil, timestamp: nil, authentication: authentication, apnsID: apnsID)
    }

    /// `Apple Push Services: com.example.app` → `com.example.app`.
    static func bundleID(fromCommonName name: String) -> String? {
        let prefix = "Apple Push Services: "
        return name.hasPrefix(prefix) ? String(name.dropFirst(prefix.count)) : nil
    }

    /// 8-4-4-4-12 hex digits.
    static func isCanonicalUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.utf8.allSatisfy(\.isHexDigit) }
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self)
    }
}
