@_spi(RawRequests) import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

@Suite struct BroadcastTests {
    struct Score: Codable, Sendable { var home: Int; var away: Int }
    let bundle = Fixture.bundleID
    let timestamp = Date(timeIntervalSince1970: 1_700_000_000)

    /// Create, read, broadcast an update and an end, list, delete: each exact request as the server
    /// received it, through libcurl.
    func lifecycle<C: Connector>(
        _ connector: C, fixture: Fixture, authorization: Bool,
        update sendUpdate: (LiveActivityUpdate<Score>, BroadcastChannel) async throws -> APNsResponse,
        end sendEnd: (LiveActivityEnd<Score>, BroadcastChannel) async throws -> APNsResponse
    ) async throws {
        let channels = ChannelManager(connector)
        let requestID = APNsID("7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c")
        let channel = try await channels.create(bundleID: bundle, storagePolicy: .noMessageStored, requestID: requestID)
        #expect(channel.storagePolicy == .noMessageStored)
        #expect(BroadcastChannel.isBase64(channel.id))
        let info = try await channels.read(channel)
        #expect(info == ChannelInfo(storagePolicy: .noMessageStored, pushType: "LiveActivity"))
        #expect(try await channels.list(bundleID: bundle).map(\.id) == [channel.id])

        var records = fixture.server.requests
        func names(_ record: RecordedRequest) -> [String] {
            record.headers.map(\.description).filter { !$0.hasPrefix("authorization: ") }
        }
        #expect(records[0].method == "POST" && records[0].path == "/1/apps/com.example.app/channels")
        #expect(names(records[0]) == ["apns-request-id: 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c", "content-length: 55"])
        #expect(records[0].bodyText == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
        #expect(records[0].status == 201)
        #expect(records[1].method == "GET" && records[1].path == "/1/apps/com.example.app/channels")
        #expect(names(records[1]) == ["apns-channel-id: \(channel.id)"])
        #expect(records[2].method == "GET" && records[2].path == "/1/apps/com.example.app/all-channels")
        #expect(records.allSatisfy { ($0[header: "authorization"] != nil) == authorization })

        fixture.server.clearRequests()
        let update = LiveActivityNotification(
            bundleID: bundle, update: Score(home: 1, away: 0), timestamp: timestamp, apnsID: requestID)
        let response = try await sendUpdate(update, channel)
        #expect(response.status == 200)
        #expect(response.requestID == "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c")
        #expect(response.uniqueID != nil)
        let end = LiveActivityNotification(
            bundleID: bundle, end: Score(home: 2, away: 1), timestamp: timestamp, dismissalDate: timestamp,
            priority: .powerConsiderate)
        _ = try await sendEnd(end, channel)
        records = fixture.server.requests
        #expect(records[0].path == "/4/broadcasts/apps/com.example.app")
        #expect(
            names(records[0]) == [
                "apns-channel-id: \(channel.id)", "apns-push-type: liveactivity", "apns-priority: 10",
                "apns-expiration: 0",
                "apns-request-id: 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c", "content-length: \(records[0].body.count)",
            ])
        #expect(
            records[0].bodyText
                == #"{"aps":{"content-state":{"home":1,"away":0},"timestamp":1700000000,"event":"update"}}"#)
        #expect(
            names(records[1]).prefix(4) == [
                "apns-channel-id: \(channel.id)", "apns-push-type: liveactivity", "apns-priority: 5",
                "apns-expiration: 0",
            ])
        #expect(
            records[1].bodyText
                == #"{"aps":{"content-state":{"home":2,"away":1},"timestamp":1700000000,"event":"end","dismissal-date":1700000000}}"#
        )

        try await channels.delete(channel)
        #expect(fixture.server.requests.last?.status == 204)
        #expect(fixture.server.requests.last?.method == "DELETE")
        #expect(try await channels.list(bundleID: bundle).isEmpty)
        await expectRejection(.channelNotRegistered, status: 400) { _ = try await channels.read(channel) }
    }

    @Test func tokenAuth() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            try await lifecycle(
                connector, fixture: fixture, authorization: true,
                update: { try await send($0, via: connector, to: $1) },
                end: { try await send($0, via: connector, to: $1) })
        }
    }

    @Test func certificateAuth() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.certificateConnector()
            try await lifecycle(
                connector, fixture: fixture, authorization: false,
                update: { try await send($0, via: connector, to: $1) },
                end: { try await send($0, via: connector, to: $1) })
        }
    }

    @Test func requestValues() throws {
        let channel = try BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app")
        #expect(
            try ChannelRequest.delete(channel).description
                == "DELETE /1/apps/com.example.app/channels\napns-channel-id: dHN0LXNyY2gtY2hubA==\n\n")
        #expect(
            try ChannelRequest.list(bundleID: "com.example.app").description
                == "GET /1/apps/com.example.app/all-channels\n\n")
        let request = try LiveActivityNotification(
            bundleID: "com.example.app", update: Score(home: 0, away: 0), timestamp: timestamp,
            expiration: .at(timestamp)
        )
        .request(to: channel)
        #expect(request.service == .broadcast)
        #expect(request[header: "apns-expiration"] == "1700000000")
        #expect(request[header: "apns-topic"] == nil)
    }

    @Test func clientRefusesWhatAChannelCannotTake() throws {
        let unstored = try BroadcastChannel(
            id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app", storagePolicy: .noMessageStored)
        #expect(throws: APNsError.validation(.expirationOnUnstoredChannel(1_700_000_000))) {
            try LiveActivityNotification(
                bundleID: "a", update: Score(home: 0, away: 0), timestamp: timestamp, expiration: .at(timestamp)
            ).request(to: unstored)
        }
        #expect(throws: APNsError.validation(.collapseIDOnBroadcast)) {
            try LiveActivityNotification(
                bundleID: "a", update: Score(home: 0, away: 0), timestamp: timestamp, collapseID: "c"
            ).request(to: unstored)
        }
        #expect(throws: APNsError.validation(.invalidChannelID("not base64!"))) {
            try BroadcastChannel(id: "not base64!", bundleID: "a.b")
        }
        struct Big: Codable, Sendable { var text: String }
        let big = LiveActivityNotification(
            bundleID: "a", update: Big(text: String(repeating: "x", count: 5000)), timestamp: timestamp)
        #expect(try big.request(to: unstored).body.count > 4096)  // 5120 on a channel
        #expect(throws: APNsError.self) { try big.request(to: .test) }  // 4096 on a device
        let start = LiveActivityNotification(
            bundleID: "a", start: Score(home: 0, away: 0), attributesType: "Game", attributes: Score(home: 0, away: 0),
            alert: LiveActivityAlert(title: "t", body: "b"), timestamp: timestamp, pushInput: .channel(unstored))
        #expect(try start.request(to: .test).bodyText.hasSuffix(#""input-push-channel":"dHN0LXNyY2gtY2hubA=="}}"#))
    }

    struct ChannelCase: Sendable, CustomTestStringConvertible {
        var name: String
        var request: @Sendable (String) -> APNsRequest
        var reason: APNsRejection.Reason
        var testDescription: String { name }
    }

    static let errorCases: [ChannelCase] = [
        .init(
            name: "missing channel id",
            request: { _ in
                APNsRequest(
                    method: .get, service: .management, path: "/1/apps/com.example.app/channels", headers: [], body: [])
            }, reason: .missingChannelId),
        .init(
            name: "bad channel id",
            request: { _ in
                APNsRequest(
                    method: .get, service: .management, path: "/1/apps/com.example.app/channels",
                    headers: [.init(name: "apns-channel-id", value: "%%%")], body: [])
            }, reason: .badChannelId),
        .init(
            name: "unknown channel",
            request: { _ in
                APNsRequest(
                    method: .delete, service: .management, path: "/1/apps/com.example.app/channels",
                    headers: [.init(name: "apns-channel-id", value: "AAAAAAAAAAAAAAAAAAAAAA==")], body: [])
            }, reason: .channelNotRegistered),
        .init(
            name: "expiration on a no-storage channel",
            request: { id in
                APNsRequest(
                    method: .post, service: .broadcast, path: "/4/broadcasts/apps/com.example.app",
                    headers: [
                        .init(name: "apns-channel-id", value: id), .init(name: "apns-push-type", value: "liveactivity"),
                        .init(name: "apns-priority", value: "10"), .init(name: "apns-expiration", value: "1900000000"),
                    ], body: Array(#"{"aps":{"content-state":{},"timestamp":1,"event":"update"}}"#.utf8))
            }, reason: .badExpirationDate),
        .init(
            name: "start to a channel",
            request: { id in
                APNsRequest(
                    method: .post, service: .broadcast, path: "/4/broadcasts/apps/com.example.app",
                    headers: [
                        .init(name: "apns-channel-id", value: id), .init(name: "apns-push-type", value: "liveactivity"),
                        .init(name: "apns-expiration", value: "0"),
                    ],
                    body: Array(
                        #"{"aps":{"alert":{"title":"t","body":"b"},"content-state":{},"timestamp":1,"event":"start","attributes-type":"A","attributes":{}}}"#
                            .utf8))
            }, reason: .badRequestPayload),
        .init(
            name: "missing push type",
            request: { id in
                APNsRequest(
                    method: .post, service: .broadcast, path: "/4/broadcasts/apps/com.example.app",
                    headers: [
                        .init(name: "apns-channel-id", value: id), .init(name: "apns-expiration", value: "0"),
                    ], body: Array(#"{"aps":{}}"#.utf8))
            }, reason: .missingPushType),
        .init(
            name: "bad create body",
            request: { _ in
                APNsRequest(
                    method: .post, service: .management, path: "/1/apps/com.example.app/channels", headers: [],
                    body: Array(#"{"message-storage-policy":7,"push-type":"LiveActivity"}"#.utf8))
            }, reason: .badRequestParams),
    ]

    @Test(arguments: errorCases)
    func mockServerChannelErrors(_ example: ChannelCase) async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let channel = try await ChannelManager(connector).create(bundleID: bundle, storagePolicy: .noMessageStored)
            let response = try await connector.performWithoutRuleCheck(example.request(channel.id))
            #expect(APNsRejection(response).reason == example.reason)
        }
    }

    @Test func channelLimit() async throws {
        try await Fixture.with(adjust: { $0.maximumChannelsPerApp = 2 }) { fixture in
            let channels = ChannelManager(try fixture.tokenConnector())
            _ = try await channels.create(bundleID: bundle, storagePolicy: .mostRecentMessageStored)
            _ = try await channels.create(bundleID: bundle, storagePolicy: .noMessageStored)
            await expectRejection(.cannotCreateChannelConfig, status: 400) {
                _ = try await channels.create(bundleID: bundle, storagePolicy: .noMessageStored)
            }
            // Another app has its own quota.
            _ = try await channels.create(bundleID: "com.example.other", storagePolicy: .noMessageStored)
        }
    }

    @Test func certificateForAnotherAppIsATopicMismatch() async throws {
        try await Fixture.with { fixture in
            await expectRejection(.topicMismatch, status: 403) {
                _ = try await ChannelManager(fixture.certificateConnector()).list(bundleID: "com.example.other")
            }
        }
    }
}
