import APNs
import Foundation

/// Decides what APNs would answer to one raw request (protocol reference, Device requests to Responses).
///
/// What it reads from the library, so each fact has one owner: the push types' rules (topic rule,
/// priorities, sizes, authentication, required expiration, broadcast limit), rejection reasons and
/// their statuses, Apple's error body (`APNsRejection.body`), the collapse-id limit, provider-token
/// lifetimes (`ProviderTokenRules`) and the channel-id syntax.
///
/// What it spells out again **on purpose**: the wire format itself — paths (`/3/device/`,
/// `/4/broadcasts/apps/`, `/1/apps/…/channels`), header names, JSON keys inside `aps`, Live
/// Activity event names, channel body keys and UUID syntax. Those are what the client's tests
/// check against this server; if client and server read one shared constant, a wrong constant
/// would pass every test. It parses the raw method, path, headers and body, independently of how
/// the client built them.
struct RequestValidator {
    /// What the mock judges a connection's client certificate by.
    struct ClientCertificate: Sendable {
        /// The subject's common name.
        var commonName: String
        /// Apple's topic list, when the certificate carries one.
        var topics: [PushCertificate.Topic]?
        /// The environments its extensions name; empty for an older certificate that names none.
        var environments: Set<PushCertificate.Environment>
    }

    struct Incoming {
        var method: String
        var path: String
        var headers: [APNsRequest.Header]
        var body: [UInt8]
        /// The verified client certificate, if the connection presented one.
        var clientCertificate: ClientCertificate?
        /// The key of the first push on the connection whose token verified, if one has.
        var connectionKeyID: String? = nil

        func header(_ name: String) -> String? { headers.first(where: { $0.name == name })?.value }
    }

    struct Verdict {
        var status: Int
        var reason: APNsRejection.Reason?
        var timestamp: Int64?
        var authentication: RecordedRequest.Authentication
        /// Response headers besides `:status` (and the JSON content type of a rejection).
        var headers: [(String, String)] = []
        /// A success body (channel reads and lists).
        var body: String?

        static func reject(
            _ reason: APNsRejection.Reason, _ auth: RecordedRequest.Authentication = .none, timestamp: Int64? = nil
        ) -> Verdict {
            Verdict(status: reason.defaultStatus, reason: reason, timestamp: timestamp, authentication: auth)
        }
    }

    /// The headers APNs reads; each may appear once.
    static let singleHeaders: Set<String> = [
        "authorization", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id",
        "apns-collapse-id",
        "apns-channel-id", "apns-request-id",
    ]

    /// The server's side of the answer (``ServerState`` when serving; the fuzz harness's own).
    let state: any ValidationContext

    func evaluate(_ request: Incoming) -> Verdict {
        if request.path.hasPrefix("/4/broadcasts/apps/") || request.path.hasPrefix("/1/apps/") {
            var verdict =
                Self.duplicateHeader(in: request)
                ?? (request.path.hasPrefix("/1/apps/")
                    ? evaluateManagement(request) : evaluateBroadcast(request))
            // Every broadcast and channel answer carries an apns-request-id, a failure's too: the
            // request's, or one APNs makes (protocol reference, Broadcast channels).
            if !verdict.headers.contains(where: { $0.0 == "apns-request-id" }) {
                let sent = request.header("apns-request-id").flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil }
                verdict.headers.insert(("apns-request-id", sent ?? APNsID().description), at: 0)
            }
            return verdict
        }
        var verdict = Self.duplicateHeader(in: request) ?? evaluateDevice(request)
        // Every device answer carries an apns-id, a failure's too: the request's, or one APNs
        // makes (protocol reference, Responses), also in place of one that is not a UUID.
        if !verdict.headers.contains(where: { $0.0 == "apns-id" }) {
            let sent = request.header("apns-id").flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil }
            verdict.headers.insert(("apns-id", sent ?? APNsID().description), at: 0)
        }
        return verdict
    }

    /// DuplicateHeaders when a header APNs reads appears twice.
    private static func duplicateHeader(in request: Incoming) -> Verdict? {
        var seen = Set<String>()
        for header in request.headers where singleHeaders.contains(header.name) {
            guard seen.insert(header.name).inserted else { return .reject(.duplicateHeaders) }
        }
        return nil
    }

    // MARK: Authentication

    /// A client certificate on the connection, or a bearer token that verifies.
    private enum Authenticated {
        case success(RecordedRequest.Authentication)
        case failure(APNsRejection.Reason)
    }

    private func authenticate(_ request: Incoming) -> Authenticated {
        if let certificate = request.clientCertificate {
            // A certificate issued for the other environment (one that names none is taken as
            // Apple's older certificates were, for either).
            if !certificate.environments.isEmpty, !certificate.environments.contains(state.keyEnvironment) {
                return .failure(.badCertificateEnvironment)
            }
            return .success(.certificate(commonName: certificate.commonName))
        }
        guard let authorization = request.header("authorization") else { return .failure(.missingProviderToken) }
        switch state.verifyToken(authorization) {
        case .valid(let teamID, let keyID, let issuedAt):
            // APNs ties a connection to the key of its first push, and to that key's related key
            // (protocol reference, Token authentication).
            if let tied = request.connectionKeyID, tied != keyID, !state.keysAreRelated(tied, keyID) {
                return .failure(.unrelatedKeyIdInToken)
            }
            if let scope = state.keyScope(of: keyID), !scope.environments.contains(state.keyEnvironment) {
                return .failure(.badEnvironmentKeyIdInToken)
            }
            return .success(.token(teamID: teamID, keyID: keyID, issuedAt: issuedAt))
        case .rejected(let reason): return .failure(reason)
        }
    }

    /// Whether the connection may act for `bundleID`: the certificate's bundle, or the team's
    /// allowed bundle ids.
    private func authorize(
        _ authentication: RecordedRequest.Authentication, bundleID: String, mismatch: APNsRejection.Reason,
        checkAllowedBundles: Bool = true
    ) -> APNsRejection.Reason? {
        if case .certificate(let commonName) = authentication,
            let certified = RequestValidator.bundleID(fromCommonName: commonName),
            certified != bundleID
        {
            return mismatch
        }
        if checkAllowedBundles, let allowed = state.allowedBundleIDs, !allowed.contains(bundleID) {
            return .topicDisallowed
        }
        // A topic-specific key sends for its apps only.
        if case .token(_, let keyID, _) = authentication, let scope = state.keyScope(of: keyID),
            !scope.covers(bundleID: bundleID)
        {
            return .topicDisallowed
        }
        return nil
    }

    // MARK: Device pushes (protocol reference, Device requests to Live Activities)

    private func evaluateDevice(_ request: Incoming) -> Verdict {
        // The path is `/3/device/<token>` and nothing else: `/3/device` or `/3/device/` lacks the
        // token, any other path (`/3/devices/…`, `/3/device/<token>/more`) is not one APNs serves.
        let devicePrefix = "/3/device/"
        let token: String
        if request.path == "/3/device" || request.path == devicePrefix {
            token = ""
        } else if request.path.hasPrefix(devicePrefix), !request.path.dropFirst(devicePrefix.count).contains("/") {
            token = String(request.path.dropFirst(devicePrefix.count))
        } else {
            return .reject(.badPath)
        }
        guard request.method == "POST" else { return .reject(.methodNotAllowed) }
        guard !token.isEmpty else { return .reject(.missingDeviceToken) }
        // A token is hex, an even number of digits, no shorter than APNs issues and no longer
        // than the library takes (protocol reference, Device requests).
        guard token.utf8.count % 2 == 0, token.utf8.allSatisfy({ $0.isHexDigit }),
            token.utf8.count >= 2 * state.minimumDeviceTokenBytes, token.utf8.count <= 2 * Device.maximumTokenBytes
        else {
            return .reject(.badDeviceToken)
        }

        let authentication: RecordedRequest.Authentication
        switch authenticate(request) {
        case .success(let value): authentication = value
        case .failure(let reason): return .reject(reason)
        }

        // APNs requires apns-push-type only for watchOS and takes a request without it as an alert
        // (protocol reference, Device requests); `strict` refuses it, as no correct client omits it.
        guard let pushTypeName = request.header("apns-push-type") ?? (state.strict ? nil : PushType.alert.rawValue)
        else {
            return .reject(.missingPushType, authentication)
        }
        guard let pushType = PushType(rawValue: pushTypeName) else { return .reject(.invalidPushType, authentication) }
        switch authentication {
        case .certificate where !pushType.authentication.contains(.certificate):
            return .reject(.badCertificate, authentication)
        case .token where !pushType.authentication.contains(.token):
            return .reject(.invalidProviderToken, authentication)
        default: break
        }

        let topic: String
        if let sent = request.header("apns-topic"), !sent.isEmpty {
            topic = sent
        } else if let certificate = request.clientCertificate, let subject = Self.defaultTopic(of: certificate) {
            topic = subject  // a certificate with one topic names it (protocol reference, Certificate authentication)
        } else {
            return .reject(.missingTopic, authentication)
        }
        // The same topic rule the client checks (PushType.bundleID(fromTopic:)).
        guard let bundleID = pushType.bundleID(fromTopic: topic) else { return .reject(.badTopic, authentication) }
        // MDM topics are certificate UIDs, not the team's bundle ids.
        if let reason = authorize(
            authentication, bundleID: bundleID, mismatch: .topicDisallowed, checkAllowedBundles: pushType != .mdm)
        {
            return .reject(reason, authentication)
        }
        // A certificate with Apple's topic list covers only its topics, by kind (the rule the
        // client checks before sending).
        if let topics = request.clientCertificate?.topics,
            !PushCertificate.covers(topics, topic: topic, pushType: pushType)
        {
            return .reject(.topicDisallowed, authentication)
        }

        if let reason = checkPriority(request.header("apns-priority"), for: pushType) {
            return .reject(reason, authentication)
        }
        if let value = request.header("apns-expiration") {
            guard let seconds = Int(value), seconds >= 0 else { return .reject(.badExpirationDate, authentication) }
            if let required = pushType.requiredExpiration, seconds != required {
                return .reject(.badExpirationDate, authentication)
            }
        } else if pushType.requiredExpiration != nil {
            return .reject(.badExpirationDate, authentication)
        }

        let apnsID: String
        if let value = request.header("apns-id") {
            guard RequestValidator.isCanonicalUUID(value) else { return .reject(.badMessageId, authentication) }
            apnsID = value
        } else {
            apnsID = APNsID().description
        }
        if let value = request.header("apns-collapse-id") {
            guard !value.isEmpty, value.utf8.count <= CollapseID.maximumLength else {
                return .reject(.badCollapseId, authentication)
            }
        }

        if let reason = checkPayload(request.body, for: pushType, limit: pushType.maximumPayloadSize) {
            return .reject(reason, authentication)
        }

        if let scripted = state.scriptedRejection(for: token) {
            var verdict = Verdict.reject(scripted.reason, authentication, timestamp: scripted.timestamp)
            verdict.status = scripted.status
            verdict.headers = [("apns-id", apnsID)]
            return verdict
        }
        return Verdict(
            status: 200, authentication: authentication,
            headers: state.answersWithUniqueID
                ? [("apns-id", apnsID), ("apns-unique-id", APNsID().description)] : [("apns-id", apnsID)])
    }

    private func checkPriority(_ value: String?, for pushType: PushType) -> APNsRejection.Reason? {
        if let value {
            guard let priority = PushPriority(headerValue: value), pushType.allowedPriorities.contains(priority) else {
                return .badPriority
            }
        } else if !pushType.allowedPriorities.contains(.immediate) {
            return .badPriority  // omitted means 10
        }
        return nil
    }

    private func checkPayload(
        _ body: [UInt8], for pushType: PushType, limit: Int, broadcast: Bool = false
    ) -> APNsRejection.Reason? {
        guard !body.isEmpty else { return .payloadEmpty }
        guard body.count <= limit else { return .payloadTooLarge }
        // A body that is not a JSON object: Apple names no reason for a device request (protocol
        // reference, Responses), and this one is its reason for a broadcast's.
        guard let json = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .badRequestPayload
        }
        // APNs checks a broadcast's payload; a device payload's shape it does not (keys it does
        // not use are ignored), so only `strict` checks that.
        guard broadcast || state.strict else { return nil }
        guard PayloadShape.isValid(json, for: pushType, broadcast: broadcast, strict: state.strict) else {
            return .badRequestPayload
        }
        return nil
    }

    // MARK: Broadcasts (protocol reference, Broadcast channels)

    private func evaluateBroadcast(_ request: Incoming) -> Verdict {
        guard request.method == "POST" else { return .reject(.methodNotAllowed) }
        let bundleID = String(request.path.dropFirst("/4/broadcasts/apps/".count))
        guard !bundleID.isEmpty, !bundleID.contains("/") else { return .reject(.badPath) }
        let authentication: RecordedRequest.Authentication
        switch authenticate(request) {
        case .success(let value): authentication = value
        case .failure(let reason): return .reject(reason)
        }
        // The path names the app's bundle id; a push type's topic in its place (`….voip`,
        // `….push-type.liveactivity`) is not a topic the connection may send broadcasts to.
        if PushType.allCases.contains(where: { $0.topicSuffix.map { !$0.isEmpty && bundleID.hasSuffix($0) } ?? false })
        {
            return .reject(.topicDisallowed, authentication)
        }
        if let reason = authorize(authentication, bundleID: bundleID, mismatch: .topicMismatch) {
            return .reject(reason, authentication)
        }
        guard let channelID = request.header("apns-channel-id") else {
            return .reject(.missingChannelId, authentication)
        }
        guard BroadcastChannel.isBase64(channelID) else { return .reject(.badChannelId, authentication) }
        guard let policy = state.channelPolicy(bundleID: bundleID, id: channelID) else {
            return .reject(.channelNotRegistered, authentication)
        }
        guard let pushTypeName = request.header("apns-push-type") else {
            return .reject(.missingPushType, authentication)
        }
        guard pushTypeName == PushType.liveactivity.rawValue else { return .reject(.invalidPushType, authentication) }
        if let reason = checkPriority(request.header("apns-priority"), for: .liveactivity) {
            return .reject(reason, authentication)
        }
        guard let expiration = request.header("apns-expiration").flatMap(Int.init), expiration >= 0 else {
            return .reject(.badExpirationDate, authentication)
        }
        if policy == .noMessageStored && expiration != 0 { return .reject(.badExpirationDate, authentication) }
        if request.header("apns-collapse-id") != nil { return .reject(.badCollapseId, authentication) }
        var requestID = APNsID().description
        if let value = request.header("apns-request-id") {
            guard RequestValidator.isCanonicalUUID(value) else { return .reject(.badRequestParams, authentication) }
            requestID = value
        }
        if let reason = checkPayload(
            request.body, for: .liveactivity, limit: PushType.liveactivity.maximumBroadcastPayloadSize ?? 0,
            broadcast: true)
        {
            var verdict = Verdict.reject(reason, authentication)
            verdict.headers = [("apns-request-id", requestID)]
            return verdict
        }
        return Verdict(
            status: 200, authentication: authentication,
            headers: [("apns-request-id", requestID), ("apns-unique-id", APNsID().description)])
    }

    // MARK: Channel management (protocol reference, Broadcast channels)

    private func evaluateManagement(_ request: Incoming) -> Verdict {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "1", "apps", <bundle>, "channels" | "all-channels"
        guard parts.count == 5, !parts[3].isEmpty, parts[4] == "channels" || parts[4] == "all-channels" else {
            return .reject(.badPath)
        }
        let bundleID = String(parts[3])
        let authentication: RecordedRequest.Authentication
        switch authenticate(request) {
        case .success(let value): authentication = value
        case .failure(let reason): return .reject(reason)
        }
        if let reason = authorize(authentication, bundleID: bundleID, mismatch: .topicMismatch) {
            return .reject(reason, authentication)
        }
        var requestID = APNsID().description
        if let value = request.header("apns-request-id") {
            guard RequestValidator.isCanonicalUUID(value) else { return .reject(.badRequestParams, authentication) }
            requestID = value
        }
        var verdict = manage(
            request, bundleID: bundleID, all: parts[4] == "all-channels", authentication: authentication)
        verdict.headers.insert(("apns-request-id", requestID), at: 0)
        return verdict
    }

    private func manage(
        _ request: Incoming, bundleID: String, all: Bool, authentication: RecordedRequest.Authentication
    ) -> Verdict {
        if all {
            guard request.method == "GET" else { return .reject(.methodNotAllowed, authentication) }
            let ids = state.channelIDs(bundleID: bundleID)
            let list = ids.map { "\"\($0)\"" }.joined(separator: ",")
            return Verdict(status: 200, authentication: authentication, body: #"{"channels":["# + list + "]}")
        }
        switch request.method {
        case "POST":
            struct Body: Decodable {
                var policy: Int
                var pushType: String
                enum CodingKeys: String, CodingKey {
                    case policy = "message-storage-policy"
                    case pushType = "push-type"
                }
            }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)) else {
                return .reject(.badRequestPayload, authentication)
            }
            guard let policy = MessageStoragePolicy(rawValue: body.policy), body.pushType == "LiveActivity" else {
                return .reject(.badRequestParams, authentication)
            }
            guard let id = state.createChannel(bundleID: bundleID, policy: policy) else {
                return .reject(.cannotCreateChannelConfig, authentication)
            }
            return Verdict(status: 201, authentication: authentication, headers: [("apns-channel-id", id)])
        case "GET", "DELETE":
            guard let id = request.header("apns-channel-id") else { return .reject(.missingChannelId, authentication) }
            guard BroadcastChannel.isBase64(id) else { return .reject(.badChannelId, authentication) }
            guard let policy = state.channelPolicy(bundleID: bundleID, id: id) else {
                return .reject(.channelNotRegistered, authentication)
            }
            if request.method == "DELETE" {
                state.deleteChannel(bundleID: bundleID, id: id)
                return Verdict(status: 204, authentication: authentication)
            }
            return Verdict(
                status: 200, authentication: authentication,
                body: #"{"message-storage-policy":"# + String(policy.rawValue) + #","push-type":"LiveActivity"}"#)
        default:
            return .reject(.methodNotAllowed, authentication)
        }
    }

    // MARK: Helpers

    /// `Apple Push Services: com.example.app` → `com.example.app`.
    /// The topic APNs takes for a certificate connection's request without `apns-topic`: the
    /// subject's, when the certificate has no topic list; the one topic of a list of one. A
    /// certificate with several topics has none: the request must name one.
    static func defaultTopic(of certificate: ClientCertificate) -> String? {
        guard let topics = certificate.topics else { return bundleID(fromCommonName: certificate.commonName) }
        return topics.count == 1 ? topics[0].name : nil
    }

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
