import APNs
import APNsMockServer
import Foundation
import Testing

/// Token keys as Apple scopes them now: team keys restricted to one environment, topic-specific
/// keys for their apps, and a topic key's related key on the same connection. Stated to the
/// connector, what a key cannot send is refused before any byte; not stated, the mock answers as
/// APNs does, with the same advice.
@Suite struct KeyScopeTests {
    static let relatedKeyID = "KEY0000002"
    static let otherApp = "com.example.other"

    static func notification(_ bundleID: String = Fixture.bundleID) -> AlertNotification<NoAppData> {
        AlertNotification(bundleID: bundleID) { Alert("scoped") }
    }

    static func connector(
        _ fixture: Fixture, scope: KeyScope?, relatedKey: RelatedKey? = nil, environment: APNsEnvironment? = nil
    ) throws -> TokenConnector {
        try TokenConnector(
            teamID: Fixture.teamID, keyID: Fixture.keyID, key: .pem(fixture.signingKey.privateKeyPEM), scope: scope,
            relatedKey: relatedKey, environment: environment ?? fixture.environment, transport: fixture.transport)
    }

    /// The text form `--key-scope` takes and the gateway stores, both ways.
    @Test func aScopeIsWrittenAndReadAsOneArgument() {
        let scopes: [(KeyScope, String)] = [
            (.team, "team"), (.team(.sandbox), "team:sandbox"), (.team(.production), "team:production"),
            (.topics(["com.b", "com.a"], environment: .production), "topics:production:com.a,com.b"),
        ]
        for (scope, argument) in scopes {
            #expect(scope.argument == argument)
            #expect(KeyScope(argument: argument) == scope)
        }
        #expect(
            KeyScope(argument: "topics:sandbox: com.a , com.b") == .topics(["com.a", "com.b"], environment: .sandbox))
        for wrong in [
            "", "teams", "team:staging", "team:sandbox:com.a", "topics:sandbox", "topics:sandbox:",
            "topics:sandbox:com.a,,com.b", "topics::com.a",
        ] {
            #expect(KeyScope(argument: wrong) == nil, "\(wrong)")
        }
    }

    @Test func aKeyForTheOtherEnvironmentIsRefusedWhenTheConnectorIsMade() async throws {
        try await Fixture.with { fixture in
            let expected = APNsError.credential(
                .keyNotForEnvironment(keyID: Fixture.keyID, connector: .production, key: [.sandbox]))
            #expect(throws: expected) {
                try Self.connector(fixture, scope: .team(.sandbox), environment: .production)
            }
            #expect(
                expected.description.contains(
                    "The key KEY0000001 is for the sandbox environment only, not production: APNs would answer BadEnvironmentKeyIdInToken. Use environment .sandbox, or a key made for production"
                ))
            #expect(throws: Never.self) {
                try Self.connector(fixture, scope: .team(.production), environment: .production)
            }
            #expect(throws: Never.self) { try Self.connector(fixture, scope: .team, environment: .sandbox) }
        }
    }

    @Test func aTopicKeySendsForItsAppsAndRefusesAnotherBeforeAnyByte() async throws {
        let scope = KeyScope.topics([Fixture.bundleID], environment: .sandbox)
        try await Fixture.with(adjust: { $0.keyScopes = [Fixture.keyID: scope] }) { fixture in
            let connector = try Self.connector(fixture, scope: scope)
            #expect(try await send(Self.notification(), via: connector, to: .test).status == 200)
            // Every push type's topic of a covered app is the app's.
            #expect(
                try await send(
                    VoIPNotification(bundleID: Fixture.bundleID, appData: NoAppData()), via: connector, to: .test
                )
                .status == 200)
            let error = await #expect(throws: APNsError.self) {
                try await send(Self.notification(Self.otherApp), via: connector, to: .test)
            }
            #expect(
                error
                    == .credential(
                        .keyDoesNotCoverTopic(keyID: Fixture.keyID, topic: Self.otherApp, covered: [Fixture.bundleID])))
            #expect(error?.mayHaveBeenDelivered == false)
            #expect(fixture.server.requests.count == 2)  // nothing of the refused send was written
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// A connector told nothing sends, and the mock answers as APNs: the advice names the scope.
    @Test func unstatedTheMockAnswersAsAPNsWithTheSameAdvice() async throws {
        let topics = KeyScope.topics([Fixture.bundleID], environment: .sandbox)
        try await Fixture.with(adjust: { $0.keyScopes = [Fixture.keyID: topics] }) { fixture in
            let connector = try Self.connector(fixture, scope: nil)
            let error = await #expect(throws: APNsError.self) {
                try await send(Self.notification(Self.otherApp), via: connector, to: .test)
            }
            guard case .rejected(let rejection)? = error else {
                Issue.record("not a rejection: \(String(describing: error))")
                return
            }
            #expect(rejection.status == 400 && rejection.reason == .topicDisallowed)
            #expect(rejection.reason?.advice.contains("topic-specific key's apps") == true)
            await connector.shutdown(gracePeriod: .zero)
        }
        try await Fixture.with(adjust: {
            $0.environment = .production
            $0.keyScopes = [Fixture.keyID: .team(.sandbox)]
        }) { fixture in
            let connector = try Self.connector(fixture, scope: nil)
            let error = await #expect(throws: APNsError.self) {
                try await send(Self.notification(), via: connector, to: .test)
            }
            guard case .rejected(let rejection)? = error else {
                Issue.record("not a rejection: \(String(describing: error))")
                return
            }
            #expect(rejection.status == 403 && rejection.reason == .badEnvironmentKeyIdInToken)
            #expect(rejection.reason?.advice.contains("The key is for the other environment") == true)
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// Apple: "you can use authentication tokens from both the topic-based key and its related key"
    /// on one connection. The connector signs each request with the key that covers its app.
    @Test func aTopicKeyAndItsRelatedKeyShareOneConnection() async throws {
        let related = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: Self.relatedKeyID)
        let topics = KeyScope.topics([Fixture.bundleID], environment: .sandbox)
        try await Fixture.with(adjust: {
            $0.signingKeys.append(related)
            $0.keyScopes = [Fixture.keyID: topics]
            $0.relatedKeys = [Fixture.keyID: Self.relatedKeyID]
        }) { fixture in
            let connector = try Self.connector(
                fixture, scope: topics,
                relatedKey: RelatedKey(keyID: Self.relatedKeyID, key: .pem(related.privateKeyPEM), scope: .team))
            #expect(try await send(Self.notification(), via: connector, to: .test).status == 200)
            #expect(try await send(Self.notification(Self.otherApp), via: connector, to: .test).status == 200)
            let keys = fixture.server.requests.map { request -> String in
                guard case .token(_, let keyID, _) = request.authentication else { return "?" }
                return keyID
            }
            #expect(keys == [Fixture.keyID, Self.relatedKeyID])
            #expect(fixture.server.connectionCount == 1)
            #expect(connector.connectionsOpened == 1)
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// Two keys the server does not know as related: the second is refused on the first's
    /// connection (UnrelatedKeyIdInToken), and the connector sends it again on a new one.
    @Test func keysNotRelatedGetAConnectionEach() async throws {
        let other = MockCertificateAuthority.makeSigningKey(teamID: Fixture.teamID, keyID: Self.relatedKeyID)
        let topics = KeyScope.topics([Fixture.bundleID], environment: .sandbox)
        try await Fixture.with(adjust: { $0.signingKeys.append(other) }) { fixture in
            let connector = try Self.connector(
                fixture, scope: topics,
                relatedKey: RelatedKey(keyID: Self.relatedKeyID, key: .pem(other.privateKeyPEM), scope: .team))
            #expect(try await send(Self.notification(), via: connector, to: .test).status == 200)
            #expect(try await send(Self.notification(Self.otherApp), via: connector, to: .test).status == 200)
            #expect(fixture.server.requests.map(\.status) == [200, 403, 200])
            #expect(connector.connectionsOpened == 2)
            await connector.shutdown(gracePeriod: .zero)
        }
    }
}
