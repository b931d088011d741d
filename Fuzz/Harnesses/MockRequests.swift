// The mock server's request validation (Sources/APNsMockServer/RequestValidator.swift): a client
// under test is input too. Any method, path, headers, body and client certificate must get an
// answer without crashing, and the answer must be one APNs could give:
// - a status APNs uses, with a reason exactly when it is not a success, and that reason's body
//   parses as JSON naming it;
// - a success only for a request that authenticated;
// - on every answer to a device request, a failure's too, the apns-id the request carried when it
//   is a UUID, else a canonical one of the server's;
// - a success body (channel reads and lists) that parses as JSON;
// - apns-unique-id only on a success, and only from a server answering as the sandbox.
// Compiled into the mock server's module (see Fuzz/run.sh) with a context of its own instead of
// ServerState, which needs SwiftNIO and swift-crypto.
import APNs
import Foundation

/// Tokens verify when they are `bearer good`; device tokens starting `dead` have a scripted 410;
/// channels live in memory, at most 4 per app, one made at the start.
final class FuzzContext: ValidationContext {
    private let channels = Locked<[String: [(id: String, policy: MessageStoragePolicy)]]>([
        "com.example.app": [(FuzzContext.knownChannel, .mostRecentMessageStored)]
    ])
    static let knownChannel = "dHlwZS1vbmUtY2hhbm5lbA=="
    let strict: Bool
    let allowedBundleIDs: Set<String>?
    let answersWithUniqueID: Bool
    let minimumDeviceTokenBytes = 32

    init(strict: Bool, allowedBundleIDs: Set<String>?, answersWithUniqueID: Bool) {
        self.strict = strict
        self.allowedBundleIDs = allowedBundleIDs
        self.answersWithUniqueID = answersWithUniqueID
    }

    func verifyToken(_ authorization: String) -> TokenCheck {
        authorization == "bearer good"
            ? .valid(teamID: "TEAM000001", keyID: "KEY0000001", issuedAt: 0) : .rejected(.invalidProviderToken)
    }

    let keyEnvironment = KeyScope.Environment.sandbox
    func keyScope(of keyID: String) -> KeyScope? { nil }
    func keysAreRelated(_ first: String, _ second: String) -> Bool { false }

    func scriptedRejection(for token: String) -> ScriptedRejection? {
        token.hasPrefix("dead")
            ? ScriptedRejection(status: 410, reason: .unregistered, timestamp: 1_700_000_000_000) : nil
    }

    func createChannel(bundleID: String, policy: MessageStoragePolicy) -> String? {
        channels.withLock { channels in
            guard channels[bundleID, default: []].count < 4 else { return nil }
            let id = Data("channel-\(channels[bundleID, default: []].count)".utf8).base64EncodedString()
            channels[bundleID, default: []].append((id, policy))
            return id
        }
    }

    func channelPolicy(bundleID: String, id: String) -> MessageStoragePolicy? {
        channels.withLock { $0[bundleID]?.first(where: { $0.id == id })?.policy }
    }

    func channelIDs(bundleID: String) -> [String] { channels.withLock { $0[bundleID]?.map(\.id) ?? [] } }

    func deleteChannel(bundleID: String, id: String) {
        channels.withLock { $0[bundleID]?.removeAll(where: { $0.id == id }) }
    }
}

extension FuzzInput {
    /// One of `choices`, or (one time in four) arbitrary text.
    mutating func pick(_ choices: [String], limit: Int = 48) -> String {
        let selector = byte()
        return selector % 4 == 0 ? string(limit: limit) : choices[Int(selector) % choices.count]
    }
}

/// A payload the push type accepts.
func baselineBody(for pushType: PushType) -> String {
    switch pushType {
    case .background: return #"{"aps":{"content-available":1}}"#
    case .liveactivity: return #"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#
    case .alert: return #"{"aps":{"alert":{"title":"t","body":"b"}}}"#
    default: return #"{"aps":{}}"#
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMockRequests(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let flags = input.byte()
    let context = FuzzContext(
        strict: flags & 1 != 0, allowedBundleIDs: flags & 2 != 0 ? ["com.example.app"] : nil,
        answersWithUniqueID: flags & 32 == 0)
    let hex = Array("0123456789abcdef".utf8)
    let deviceToken = String(
        decoding: (0..<64).map { index in
            index < 4 && flags & 4 != 0 ? Array("dead".utf8)[index] : hex[Int(input.byte()) % 16]
        }, as: UTF8.self)
    let method = input.pick(["POST", "POST", "GET", "DELETE", "PUT"], limit: 8)
    let path =
        input.pick(
            [
                "/3/device/" + deviceToken, "/3/device/", "/3/device/abc", "/4/broadcasts/apps/com.example.app",
                "/1/apps/com.example.app/channels", "/1/apps/com.example.app/all-channels", "/1/apps//channels", "/",
            ], limit: 96) + (flags & 8 != 0 ? input.string(limit: 8) : "")
    let pushTypes = PushType.allCases.map(\.rawValue)
    var headers: [APNsRequest.Header] = []
    // Half the inputs start from a request that passes (token, push type, its topic, its required
    // expiration), so the fuzzer reaches the checks after authentication; the headers added below
    // then change, break or duplicate it.
    var baseline: PushType?
    if flags & 16 != 0 {
        let pushType = PushType.allCases[Int(input.byte()) % PushType.allCases.count]
        baseline = pushType
        headers.append(.init(name: "authorization", value: "bearer good"))
        headers.append(.init(name: "apns-push-type", value: pushType.rawValue))
        headers.append(
            .init(
                name: "apns-topic",
                value: (pushType.topicPrefix ?? "") + "com.example.app" + (pushType.topicSuffix ?? "")))
        if let expiration = pushType.requiredExpiration {
            headers.append(.init(name: "apns-expiration", value: String(expiration)))
        }
        if !pushType.allowedPriorities.contains(.immediate) {
            headers.append(.init(name: "apns-priority", value: String(pushType.defaultPriority.rawValue)))
        }
    }
    for _ in 0..<Int(input.byte() % 10) {
        let name = input.pick(
            [
                "authorization", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id",
                "apns-collapse-id",
                "apns-channel-id", "apns-request-id",
            ], limit: 24
        ).lowercased()
        let value: String
        switch name {
        case "authorization": value = input.pick(["bearer good", "bearer bad", ""])
        case "apns-push-type": value = input.pick(pushTypes)
        case "apns-topic":
            value = input.pick([
                "com.example.app", "com.example.app.voip", "com.example.app.complication",
                "com.example.app.push-type.liveactivity",
                "com.example.app.pushkit.fileprovider", "com.example.app.voip-ptt", "com.apple.mgmt.External.1234",
                "com.other.app",
            ])
        case "apns-priority": value = input.pick(["10", "5", "1", "0", "-5"], limit: 8)
        case "apns-expiration": value = input.pick(["0", "1700000000", "-1", "99999999999999999999"], limit: 24)
        case "apns-id", "apns-request-id":
            value = input.pick(["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "x"])
        case "apns-channel-id": value = input.pick([FuzzContext.knownChannel, "Y2hhbm5lbC0x", "not base64!"])
        default: value = input.string(limit: 48)
        }
        headers.append(.init(name: name, value: value))
    }
    // A certificate's environments: none (an older one), either, or both.
    let environments: Set<PushCertificate.Environment> = [[], [.sandbox], [.production], [.sandbox, .production]][
        Int(input.byte() % 4)]
    let certificate: RequestValidator.ClientCertificate?
    switch input.byte() % 4 {
    case 0:
        certificate = .init(commonName: "Apple Push Services: com.example.app", topics: nil, environments: environments)
    case 1:
        certificate = .init(
            commonName: "Apple Push Services: com.example.app",
            topics: [.init("com.example.app", kinds: ["app"]), .init("com.example.app.voip", kinds: ["voip"])],
            environments: environments)
    case 2:
        certificate = .init(
            commonName: input.string(limit: 48),
            topics: [.init(input.string(limit: 32), kinds: [input.string(limit: 8)])],
            environments: environments)
    default: certificate = nil
    }
    let bodies = [
        #"{"aps":{"alert":"hi"}}"#, #"{"aps":{"content-available":1}}"#, #"{"aps":{"alert":{"title":"t"},"badge":1}}"#,
        #"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#,
        #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#,
        #"{"aps":{}}"#, "{}", "[]", "",
    ]
    let body: [UInt8]
    switch (input.byte() % 4, baseline) {
    case (0, _): body = input.rest()
    case (1, let pushType?): body = Array(baselineBody(for: pushType).utf8)
    default: body = Array(bodies[Int(input.byte()) % bodies.count].utf8) + input.rest().prefix(64)
    }

    let request = RequestValidator.Incoming(
        method: method, path: path, headers: headers, body: body, clientCertificate: certificate)
    let verdict = RequestValidator(state: context).evaluate(request)

    let successes: Set<Int> = [200, 201, 204]
    if successes.contains(verdict.status) {
        if verdict.reason != nil { violated("\(verdict.status) with a reason") }
        if verdict.authentication == .none {
            violated("\(verdict.status) without authentication for \(method) \(path)")
        }
        if let body = verdict.body, (try? JSONSerialization.jsonObject(with: Data(body.utf8))) == nil {
            violated("success body \(body)")
        }
    } else {
        guard (400..<600).contains(verdict.status) else { violated("status \(verdict.status)") }
        guard let reason = verdict.reason else { violated("\(verdict.status) without a reason") }
        let json = APNsRejection.body(reason: reason, timestampMilliseconds: verdict.timestamp)
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            object["reason"] as? String == reason.rawValue
        else { violated("rejection body \(json)") }
    }
    // Every answer to a device request, a failure too, carries a UUID apns-id: the request's when
    // that is one.
    if !path.hasPrefix("/4/broadcasts/apps/"), !path.hasPrefix("/1/apps/") {
        guard let id = verdict.headers.first(where: { $0.0 == "apns-id" })?.1, RequestValidator.isCanonicalUUID(id)
        else { violated("a device answer (\(verdict.status)) without a UUID apns-id") }
        if let sent = request.header("apns-id"), RequestValidator.isCanonicalUUID(sent), sent != id {
            violated("apns-id \(sent) answered as \(id)")
        }
    }
    // apns-unique-id only on a success of the sandbox.
    if verdict.headers.contains(where: { $0.0 == "apns-unique-id" }),
        !context.answersWithUniqueID || !successes.contains(verdict.status)
    {
        violated("apns-unique-id on a \(verdict.status) answer")
    }
    for (name, _) in verdict.headers where name.isEmpty || name != name.lowercased() {
        violated("response header name \(name)")
    }
    return 0
}
