import APNs
import APNsMockServer
import APNsTesting
import Foundation
import Testing

/// What `extension MDMNotification: TokenDeliverable {}` in a user's module (accepted with a
/// warning) amounts to: an MDM push that the compiler lets through a token connector. A wrapper
/// instead of that extension, because conformances are process-wide and would leak into other
/// suites of this test bundle.
struct TokenMDM: TokenDeliverable {
    var base: MDMNotification
    static var pushType: PushType { MDMNotification.pushType }
    var topic: String { base.topic }
    var pushPriority: PushPriority { base.pushPriority }
    var expiration: Expiration? { base.expiration }
    var collapseID: CollapseID? { base.collapseID }
    var apnsID: APNsID? { base.apnsID }
    func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) { try base.writePayload(to: &writer) }
}

/// A push type defined outside swift-apns that claims what Apple does not allow: widgets (token
/// only, priority 10 or 5, never broadcast) declared certificate-deliverable, at priority 1,
/// broadcastable.
struct RogueWidget: CertificateDeliverable, TokenDeliverable, BroadcastDeliverable {
    static var pushType: PushType { .widgets }
    var topic = "com.example.app.push-type.widgets"
    var pushPriority: PushPriority = .immediate
    var expiration: Expiration? = nil
    var collapseID: CollapseID? = nil
    var apnsID: APNsID? = nil
    func writePayload(to writer: inout JSONWriter) throws(APNsValidationError) {
        writer.beginObject()
        writer.key("aps")
        writer.beginObject()
        writer.key("content-changed")
        writer.bool(true)
        writer.endObject()
        writer.endObject()
    }
}

/// Guarantees the compiler cannot give are enforced at run time, before any I/O, on every path:
/// `send`, bulk sends, broadcasts, `AnyConnector`, and each shipped connector's public `perform`.
@Suite struct RuleEnforcementTests {
    static let mdm = MDMNotification(
        topic: "com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5", pushMagic: "magic")
    static let mdmViaToken = APNsError.validation(.authenticationNotAllowed(pushType: .mdm, method: .token))

    @Test func publicPerformOnAShippedConnectorChecksTheRules() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            await #expect(throws: Self.mdmViaToken) { try await connector.perform(Self.mdm.request(to: .test)) }
            var low = RogueWidget()
            low.pushPriority = .low
            await #expect(throws: APNsError.validation(.priorityNotAllowed(pushType: .widgets, priority: "1"))) {
                try await connector.perform(low.request(to: .test))
            }
            let certificate = try fixture.certificateConnector()
            await #expect(
                throws: APNsError.validation(.authenticationNotAllowed(pushType: .widgets, method: .certificate))
            ) {
                try await certificate.perform(RogueWidget().request(to: .test), deadline: .now + .seconds(5))
            }
            #expect(fixture.server.streamCount == 0)  // nothing reached the server
            #expect(connector.connectionsOpened == 0 && certificate.connectionsOpened == 0)
        }
    }

    @Test func sendRefusesWhatAForeignConformanceAllows() async throws {
        let connector = TokenRecordingConnector()
        let foreign = TokenMDM(base: Self.mdm)
        await #expect(throws: Self.mdmViaToken) { try await send(foreign, via: connector, to: .test) }
        await #expect(throws: Self.mdmViaToken) { try await send(foreign, via: connector, to: [Device.test]) }
        await #expect(throws: APNsError.validation(.authenticationNotAllowed(pushType: .widgets, method: .certificate)))
        {
            try await send(RogueWidget(), via: CertificateRecordingConnector(), to: .test)
        }
        var low = RogueWidget()
        low.pushPriority = .low
        await #expect(throws: APNsError.validation(.priorityNotAllowed(pushType: .widgets, priority: "1"))) {
            try await send(low, via: connector, to: .test)
        }
        let channel = try BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app")
        await #expect(throws: APNsError.validation(.notBroadcastable(.widgets))) {
            try await send(RogueWidget(), via: connector, to: channel)
        }
        var otherApp = RogueWidget()
        otherApp.topic = "com.example.app"  // not a widgets topic
        await #expect(throws: APNsError.validation(.topicNotForPushType(pushType: .widgets, topic: "com.example.app")))
        {
            try await send(otherApp, via: connector, to: .test)
        }
        #expect(connector.requests.isEmpty)
    }

    @Test func anyConnectorChecksAuthenticationAtRunTime() async throws {
        let token = TokenRecordingConnector()
        let certificate = CertificateRecordingConnector()
        let viaToken = AnyConnector(token)
        let viaCertificate = AnyConnector(certificate)
        #expect(viaToken.authenticationMethod == .token && viaCertificate.authenticationMethod == .certificate)
        #expect(AnyConnector(viaToken).base is TokenRecordingConnector)  // not wrapped twice

        await #expect(throws: Self.mdmViaToken) { try await send(Self.mdm, via: viaToken, to: .test) }
        await #expect(throws: Self.mdmViaToken) {
            try await send(Self.mdm, via: viaToken, to: [Device.test, Device.test])
        }
        await #expect(throws: Self.mdmViaToken) { try await viaToken.perform(Self.mdm.request(to: .test)) }
        await #expect(throws: APNsError.validation(.authenticationNotAllowed(pushType: .widgets, method: .certificate)))
        {
            try await send(WidgetNotification(bundleID: "com.example.app"), via: viaCertificate, to: .test)
        }
        #expect(token.requests.isEmpty && certificate.requests.isEmpty)

        try await send(Self.mdm, via: viaCertificate, to: .test)
        try await send(WidgetNotification(bundleID: "com.example.app"), via: viaToken, to: .test)
        let summary = try await send(
            AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: viaCertificate,
            to: BulkSendTests.devices(3))
        #expect(summary.accepted == 3)
        #expect(certificate.requests.map { $0[header: "apns-push-type"] } == ["mdm", "alert", "alert", "alert"])
        #expect(token.requests.map { $0[header: "apns-push-type"] } == ["widgets"])
    }

    /// Through the real transport: AnyConnector over a shipped connector keeps the batch path and
    /// the mock server sees the pushes.
    @Test func anyConnectorOverRealConnectors() async throws {
        try await Fixture.with { fixture in
            let token = try fixture.tokenConnector()
            let connector = AnyConnector(token)
            let summary = try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector,
                to: BulkSendTests.devices(200)
            )
            #expect(
                summary
                    == {
                        var s = BulkSendSummary(); s.accepted = 200; return s
                    }())
            await #expect(throws: Self.mdmViaToken) {
                try await send(TokenMDM(base: Self.mdm), via: connector, to: .test)
            }
            #expect(fixture.server.streamCount == 200)
            await token.shutdown()
        }
    }

    @Test func bundleIDThatAlreadyHasASuffixIsRefused() async throws {
        let widget = WidgetNotification(bundleID: "com.example.app.push-type.widgets")
        #expect(
            throws: APNsError.validation(
                .topicNotForPushType(
                    pushType: .widgets, topic: "com.example.app.push-type.widgets.push-type.widgets"))
        ) {
            try widget.request(to: .test)
        }
        let update = LiveActivityNotification(
            bundleID: "com.example.app", update: NoAppData(), timestamp: Date(timeIntervalSince1970: 1))
        let channel = try BroadcastChannel(
            id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app.push-type.liveactivity")
        #expect(
            throws: APNsError.validation(
                .topicNotForPushType(
                    pushType: .liveactivity, topic: "com.example.app.push-type.liveactivity"))
        ) {
            try update.request(to: channel)
        }
        // A bundle id that merely ends like a PushKit suffix is a legal bundle id for other types.
        #expect(
            try AlertNotification(bundleID: "com.example.voip") { Alert("x") }.request(to: .test)[header: "apns-topic"]
                == "com.example.voip")
        // For its own push type it is the topic passed as the bundle id: refused, and the message
        // names the bundle id to pass.
        let voip = VoIPNotification(bundleID: "com.example.app.voip", appData: NoAppData())
        let doubled = APNsValidationError.topicNotForPushType(pushType: .voip, topic: "com.example.app.voip.voip")
        #expect(throws: APNsError.validation(doubled)) { try voip.request(to: .test) }
        #expect(
            doubled.description
                == #""com.example.app.voip.voip" repeats the voip suffix ".voip": the bundle id given already ended with it. Pass the app's bundle id ("com.example.app"); swift-apns appends ".voip"."#
        )
        #expect(PushType.complication.bundleID(fromTopic: "com.example.app.complication.complication") == nil)
        #expect(PushType.voip.bundleID(fromTopic: "com.example.app.voip") == "com.example.app")
    }
}
