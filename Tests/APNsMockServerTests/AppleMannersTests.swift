@_spi(RawRequests) import APNs
import APNsMockServer
import Foundation
import TestFixtures
import Testing

/// The mock answers the smaller rules third-party clients met as Apple words them: the one-stream
/// start ends with a valid token (not a success) and concerns token connections; a certificate
/// for the other environment; every broadcast answer's `apns-request-id`; a push type's topic in a
/// broadcast path; an `apns-id` on an injected status; a small HPACK table.
@Suite struct AppleMannersTests {
    static let alert = #"{"aps":{"alert":"x"}}"#

    static func raw(
        _ headers: [(String, String)], body: String = alert, service: APNsRequest.Service = .device,
        path: String = Device.test.path
    ) -> APNsRequest {
        APNsRequest(
            method: .post, service: service, path: path, headers: headers.map { .init(name: $0.0, value: $0.1) },
            body: Array(body.utf8))
    }

    static func reason(_ response: APNsHTTPResponse) -> APNsRejection.Reason? {
        APNsRejection(status: response.status, body: response.body).reason
    }

    /// A request refused for its priority still carried a valid token: the limit is raised (the
    /// client acknowledges a second SETTINGS). A token that does not verify leaves it at one.
    @Test func aValidTokenEndsTheOneStreamStartWhateverTheAnswer() async throws {
        try await Fixture.with(adjust: { $0.oneStreamUntilValidToken = true }) { fixture in
            let connector = try fixture.tokenConnector()
            let refused = try await connector.performWithoutRuleCheck(
                Self.raw([("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID), ("apns-priority", "7")]))
            #expect(Self.reason(refused) == .badPriority)
            // libcurl 8 acknowledges a SETTINGS when it next writes to the connection.
            _ = try await connector.performWithoutRuleCheck(
                Self.raw([("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID)]))
            #expect(await fixture.server.settingsAcknowledgements(count: 2, within: .seconds(60)), "raised")
        }
        try await Fixture.with(adjust: { $0.oneStreamUntilValidToken = true }) { fixture in
            let stranger = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000009", keyID: "KEY0000009")
            let connector = try TokenConnector(
                teamID: stranger.teamID, keyID: stranger.keyID, key: .pem(stranger.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport)
            for _ in 0..<2 {
                let refused = try await connector.performWithoutRuleCheck(
                    Self.raw([("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID)]))
                #expect(Self.reason(refused) == .invalidProviderToken)
            }
            #expect(await fixture.server.settingsAcknowledgements(count: 1, within: .seconds(60)))
            #expect(
                !(await fixture.server.settingsAcknowledgements(count: 2, within: .milliseconds(300))),
                "no token verified: still one stream")
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// A connection with a client certificate gets the whole limit when its handshake ends, before
    /// any request.
    @Test func aCertificateConnectionHasNoOneStreamStart() async throws {
        try await Fixture.with(adjust: { $0.oneStreamUntilValidToken = true }) { fixture in
            let connector = try fixture.certificateConnector()
            let refused = try await connector.performWithoutRuleCheck(
                Self.raw([("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID), ("apns-priority", "7")]))
            #expect(Self.reason(refused) == .badPriority)
            #expect(await fixture.server.settingsAcknowledgements(count: 2, within: .seconds(60)), "raised at once")
        }
    }

    /// A certificate issued for the other environment is answered 403 BadCertificateEnvironment; a
    /// universal one, or an older one that names no environment, is taken.
    struct EnvironmentCase: Sendable, CustomTestStringConvertible {
        var issued: Set<PushCertificate.Environment>
        var server: MockAPNsServer.Environment
        var status: Int
        var testDescription: String { "\(issued.sorted()) to \(server): \(status)" }
    }

    @Test(arguments: [
        EnvironmentCase(issued: [.production], server: .sandbox, status: 403),
        EnvironmentCase(issued: [.sandbox], server: .production, status: 403),
        EnvironmentCase(issued: [.sandbox], server: .sandbox, status: 200),
        EnvironmentCase(issued: [.sandbox, .production], server: .production, status: 200),
        EnvironmentCase(issued: [], server: .production, status: 200),
    ])
    func aCertificateForTheOtherEnvironment(_ item: EnvironmentCase) async throws {
        let status = item.status
        try await Fixture.with(adjust: { $0.environment = item.server }) { fixture in
            let client = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID, environments: item.issued)
            let connector = try CertificateConnector(
                certificate: .pem(client.certificatePEM), privateKey: .pem(client.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport)
            let response = try await connector.performWithoutRuleCheck(
                Self.raw([("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID)]))
            #expect(response.status == status)
            if status == 403 { #expect(Self.reason(response) == .badCertificateEnvironment) }
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// Every broadcast answer carries an apns-request-id, a refusal's too: the request's when it
    /// sent one, otherwise one the server made. A push type's topic where the bundle id belongs
    /// is TopicDisallowed, not ChannelNotRegistered.
    @Test func broadcastAnswersCarryARequestIDAndATopicInThePathIsDisallowed() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let base = [("apns-push-type", "liveactivity"), ("apns-expiration", "0")]
            let path = "/4/broadcasts/apps/\(Fixture.bundleID)"
            let id = UUID().uuidString.lowercased()
            let missing = try await connector.performWithoutRuleCheck(
                Self.raw(base + [("apns-request-id", id)], service: .broadcast, path: path))
            #expect(Self.reason(missing) == .missingChannelId)
            #expect(missing[header: "apns-request-id"] == id)
            let unnamed = try await connector.performWithoutRuleCheck(
                Self.raw(base + [("apns-channel-id", "dGVzdA==")], service: .broadcast, path: path))
            #expect(Self.reason(unnamed) == .channelNotRegistered)
            #expect(unnamed[header: "apns-request-id"].map { UUID(uuidString: $0) != nil } == true)
            for topic in ["\(Fixture.bundleID).push-type.liveactivity", "\(Fixture.bundleID).voip"] {
                let suffixed = try await connector.performWithoutRuleCheck(
                    Self.raw(
                        base + [("apns-channel-id", "dGVzdA==")], service: .broadcast,
                        path: "/4/broadcasts/apps/\(topic)"))
                #expect(Self.reason(suffixed) == .topicDisallowed, "\(topic)")
                #expect(suffixed[header: "apns-request-id"] != nil)
            }
        }
    }

    /// An injected status answer carries an apns-id like every APNs answer: the request's, or one
    /// the server made.
    @Test(arguments: [503, 429]) func anInjectedStatusCarriesAnAPNsID(status: Int) async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: status, retryAfter: 1, body: ""))
            let connector = try fixture.tokenConnector()
            let headers = [("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID)]
            let anonymous = try await connector.performWithoutRuleCheck(Self.raw(headers))
            #expect(anonymous.status == status)
            #expect(anonymous[header: "apns-id"].map { UUID(uuidString: $0) != nil } == true)
            let id = UUID().uuidString
            let named = try await connector.performWithoutRuleCheck(Self.raw(headers + [("apns-id", id)]))
            #expect(named.status == status)
            #expect(named[header: "apns-id"] == id)
        }
    }

    /// A server that advertises a small HPACK table (none at all here): the client encodes every
    /// request within it and the server decodes each whole.
    @Test(arguments: [0, 64]) func aSmallHeaderTable(size: Int) async throws {
        try await Fixture.with(adjust: { $0.headerTableSize = size }) { fixture in
            let connector = try fixture.tokenConnector()
            let ids = (0..<50).map { _ in APNsID() }
            for id in ids {
                let response = try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("small table") }, via: connector,
                    to: .test)
                #expect(response.status == 200)
            }
            #expect(fixture.server.requests.map(\.status) == Array(repeating: 200, count: 50))
            #expect(
                fixture.server.requests.compactMap { $0.headers.first { $0.name == "apns-id" }?.value }
                    == ids.map(\.description))
            #expect(fixture.server.connectionCount == 1)
        }
    }
}
