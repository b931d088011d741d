@testable import APNs
import APNsTesting
import Foundation
import Testing

struct Score: Codable, Sendable, Equatable {
    var home: Int
}

struct Match: Codable, Sendable, Equatable {
    var name: String
}

/// What `extension LiveActivityEvent.Start: BroadcastableLiveActivityEvent {}` in a user's module
/// (accepted with a warning) amounts to: a start the compiler lets reach a broadcast channel. A
/// wrapper instead of that extension, because conformances are process-wide.
struct BroadcastableStart: TokenDeliverable, CertificateDeliverable, BroadcastDeliverable {
    var base = LiveActivityNotification(
        bundleID: "com.example.app", start: Score(home: 1), attributes: Match(name: "final"),
        alert: LiveActivityAlert(title: "Kick-off", body: "Go"), timestamp: Date(timeIntervalSince1970: 1_700_000_000))
    static var pushType: PushType { .liveactivity }
    var topic: String { base.topic }
    var pushPriority: PushPriority { base.pushPriority }
    var expiration: Expiration? { base.expiration }
    var collapseID: CollapseID? { base.collapseID }
    var apnsID: APNsID? { base.apnsID }
    func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) { try base.writePayload(to: &writer) }
}

/// A Live Activity payload of a user's own type, written key by key: by default a complete start;
/// each test leaves out or changes what it checks.
struct HandWrittenActivity: TokenDeliverable, BroadcastDeliverable {
    static var pushType: PushType { .liveactivity }
    var topic = "com.example.app.push-type.liveactivity"
    var pushPriority: PushPriority = .immediate
    var expiration: Expiration? = nil
    var collapseID: CollapseID? = nil
    var apnsID: APNsID? = nil
    var event: String? = "start"
    var timestamp: @Sendable (inout JSONWriter) -> Void = { $0.int(1_700_000_000) }
    var leaveOut: Set<String> = []

    func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        writer.key("aps")
        writer.beginObject()
        if !leaveOut.contains("timestamp") {
            writer.key("timestamp")
            timestamp(&writer)
        }
        if let event {
            writer.key("event")
            writer.string(event)
        }
        if !leaveOut.contains("content-state") {
            writer.key("content-state")
            writer.beginObject()
            writer.key("alert")  // a key of the app's state, not aps.alert
            writer.string("inner")
            writer.endObject()
        }
        if !leaveOut.contains("attributes-type") {
            writer.key("attributes-type")
            writer.string("Match")
        }
        if !leaveOut.contains("attributes") {
            writer.key("attributes")
            writer.beginObject()
            writer.endObject()
        }
        if !leaveOut.contains("alert") {
            writer.key("alert")
            writer.beginObject()
            writer.key("title")
            writer.string("t")
            writer.endObject()
        }
        writer.endObject()
        writer.endObject()
    }
}

/// The Live Activity rules the types carry are checked at run time too, before any I/O, for a
/// payload of any origin, on every path: send, bulk, broadcast, `AnyConnector`, the recording
/// connectors' own `perform`. The check reads what the writer noted; a body given as bytes is read.
@Suite struct LiveActivityRuleTests {
    static let channel = try! BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app")
    static let start = APNsError.validation(.liveActivityStartToChannel)

    @Test func aStartNeverReachesAChannel() async throws {
        let token = TokenRecordingConnector()
        let certificate = CertificateRecordingConnector()
        await #expect(throws: Self.start) { try await send(BroadcastableStart(), via: token, to: Self.channel) }
        await #expect(throws: Self.start) { try await send(BroadcastableStart(), via: certificate, to: Self.channel) }
        await #expect(throws: Self.start) {
            try await send(BroadcastableStart(), via: AnyConnector(token), to: Self.channel)
        }
        await #expect(throws: Self.start) { try await send(HandWrittenActivity(), via: token, to: Self.channel) }
        // The recording connector's own perform refuses it too, as a shipped connector's does.
        let request = try BroadcastableStart().request(to: Self.channel)
        await #expect(throws: Self.start) { try await token.perform(request) }
        #expect(token.requests.isEmpty && certificate.requests.isEmpty)
        // The same start to a device goes out.
        try await send(BroadcastableStart(), via: token, to: .test)
        #expect(token.requests.count == 1)
    }

    @Test func eachEventNeedsItsKeys() async throws {
        let connector = TokenRecordingConnector()
        func refused(_ activity: HandWrittenActivity, _ error: APNsValidationError) async {
            await #expect(throws: APNsError.validation(error)) { try await send(activity, via: connector, to: .test) }
            await #expect(throws: APNsError.validation(error)) {
                try await send(activity, via: connector, to: [Device.test, Device.test])
            }
        }
        for key in ["alert", "attributes", "attributes-type", "content-state", "timestamp"] {
            await refused(HandWrittenActivity(leaveOut: [key]), .missingLiveActivityKey(event: "start", key: key))
        }
        for event in ["update", "end"] {
            await refused(
                HandWrittenActivity(event: event, leaveOut: ["content-state"]),
                .missingLiveActivityKey(event: event, key: "content-state"))
            // An update or end needs no alert or attributes.
            try await send(
                HandWrittenActivity(event: event, leaveOut: ["alert", "attributes", "attributes-type"]),
                via: connector, to: .test)
        }
        await refused(HandWrittenActivity(event: "pause"), .invalidLiveActivityEvent("pause"))
        await refused(HandWrittenActivity(event: nil), .invalidLiveActivityEvent(nil))
        await refused(HandWrittenActivity(timestamp: { $0.string("1700000000") }), .invalidDate(key: "timestamp"))
        await refused(HandWrittenActivity(timestamp: { $0.double(1.5) }), .invalidDate(key: "timestamp"))
        await refused(HandWrittenActivity(timestamp: { $0.int(-1) }), .invalidDate(key: "timestamp"))
        #expect(connector.requests.count == 2)
        try await send(HandWrittenActivity(), via: connector, to: .test)
        #expect(connector.requests.count == 3)
    }

    /// What the writer notes is what the body says, for the library's own notifications.
    @Test func theWriterNotesWhatTheBodySays() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let requests = [
            try BroadcastableStart().request(to: .test),
            try LiveActivityNotification(bundleID: "com.example.app", update: Score(home: 2), timestamp: date)
                .request(to: .test),
            try LiveActivityNotification(
                bundleID: "com.example.app", end: RawJSONObject(#"{"alert":1,"event":"x"}"#), timestamp: date,
                dismissalDate: date, alert: LiveActivityAlert(title: "t", body: "b")
            ).request(to: Self.channel),
            try HandWrittenActivity(event: "pause", timestamp: { $0.double(2) }).request(to: .test),
        ]
        for request in requests {
            let noted = try #require(request.facts)
            #expect(noted == PayloadFacts(parsing: request.body), "\(request.bodyText)")
        }
        #expect(requests[0].facts?.keys == [.timestamp, .event, .contentState, .attributesType, .attributes, .alert])
        #expect(requests[1].facts?.event == "update" && requests[1].facts?.timestamp == 1_700_000_000)
        #expect(requests[2].facts?.event == "end" && requests[2].facts?.keys.contains(.alert) == true)
    }

    /// A body given as bytes, or replaced after the request was built, is read, not trusted.
    @Test func aBodyGivenAsBytesIsRead() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        var request = try LiveActivityNotification(bundleID: "com.example.app", update: Score(home: 2), timestamp: date)
            .request(to: .test)
        try request.checkRules(for: .token)
        request.body = Array(#"{"aps":{"timestamp":1700000000,"event":"start","content-state":{}}}"#.utf8)
        #expect(request.facts == nil)
        #expect(throws: APNsValidationError.missingLiveActivityKey(event: "start", key: "attributes-type")) {
            try request.checkRules(for: .token)
        }
        let byHand = APNsRequest(
            method: .post, service: .broadcast, path: "/4/broadcasts/apps/com.example.app",
            headers: [
                .init(name: "apns-channel-id", value: Self.channel.id),
                .init(name: "apns-push-type", value: "liveactivity"),
            ],
            body: try BroadcastableStart().payload())
        #expect(throws: APNsValidationError.liveActivityStartToChannel) { try byHand.checkRules(for: .token) }
        // Equality ignores what was noted: a request built by hand equals the built one.
        let built = try BroadcastableStart().request(to: .test)
        let same = APNsRequest(
            method: built.method, service: built.service, path: built.path, headers: built.headers, body: built.body)
        #expect(same == built && same.hashValue == built.hashValue)
        #expect(throws: APNsValidationError.invalidLiveActivityEvent(nil)) {
            try APNsRequest(
                method: .post, service: .device, path: Device.test.path,
                headers: [.init(name: "apns-push-type", value: "liveactivity")], body: Array("not json".utf8)
            ).checkRules(for: .token)
        }
    }

    /// The recording connector fails where production fails.
    @Test func theRecordingConnectorAppliesTheRules() async throws {
        let connector = TokenRecordingConnector()
        let mdm = MDMNotification(topic: "com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5", pushMagic: "m")
        await #expect(throws: APNsError.validation(.authenticationNotAllowed(pushType: .mdm, method: .token))) {
            try await connector.perform(mdm.request(to: .test))
        }
        await #expect(throws: APNsError.validation(.missingLiveActivityKey(event: "start", key: "alert"))) {
            try await connector.perform(HandWrittenActivity(leaveOut: ["alert"]).request(to: .test))
        }
        #expect(connector.requests.isEmpty)
    }
}
