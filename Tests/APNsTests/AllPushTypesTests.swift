@_spi(RawRequests) import APNs
import APNsMockServer
import Foundation
import Testing

/// Every push type through libcurl to the mock server with a connector it accepts, and the mock
/// server rejecting each per-type rule when a raw request breaks it.
@Suite struct AllPushTypesTests {
    struct Payload: Encodable, Sendable { var activeSpeaker = "Ana" }
    struct State: Encodable, Sendable { var progress = 0.5 }
    struct Attrs: Encodable, Sendable { var order = "42" }
    static let mdmTopic = "com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5"

    @Test func everyTypeIsAcceptedThroughLibcurl() async throws {
        try await Fixture.with { fixture in
            let token = try fixture.tokenConnector()
            let bundle = Fixture.bundleID
            let now = Date()
            try await send(WidgetNotification(bundleID: bundle), via: token, to: .test)
            let accessory = AccessoryNotification(
                bundleID: bundle, encryptedData: "ZW5jcnlwdGVk", sessionIdentifier: "session-1", keyID: "a2V5",
                messageIndex: 42)
            try await send(accessory, via: token, to: .test)
            try await send(ControlsNotification(bundleID: bundle), via: token, to: .test)
            try await send(LocationNotification(bundleID: bundle), via: token, to: .test)
            try await send(
                FileProviderNotification(bundleID: bundle, containerIdentifier: "c", domain: "d"), via: token, to: .test
            )
            try await send(PushToTalkNotification(bundleID: bundle, appData: Payload()), via: token, to: .test)
            try await send(
                VoIPNotification(bundleID: bundle, appData: Payload(), expiration: .immediately), via: token, to: .test)
            try await send(ComplicationNotification(bundleID: bundle, appData: Payload()), via: token, to: .test)
            try await send(
                LiveActivityNotification(
                    bundleID: bundle, start: State(), attributesType: "Attrs", attributes: Attrs(),
                    alert: LiveActivityAlert(title: "Started", body: "Go"), timestamp: now, pushInput: .token),
                via: token,
                to: .test)
            try await send(
                LiveActivityNotification(bundleID: bundle, update: State(), timestamp: now), via: token, to: .test)
            try await send(
                LiveActivityNotification(bundleID: bundle, end: State(), timestamp: now, dismissalDate: now),
                via: token,
                to: .test)
            // MDM: certificate only, with a certificate issued for the MDM topic.
            let mdmCertificate = try fixture.server.certificateAuthority.issueClientCertificate(bundleID: Self.mdmTopic)
            let mdmConnector = try CertificateConnector(
                certificate: .pem(mdmCertificate.certificatePEM), privateKey: .pem(mdmCertificate.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport)
            try await send(
                MDMNotification(topic: Self.mdmTopic, pushMagic: "040ac7bf-391a-4a36-a8ab-47bd380afd33"),
                via: mdmConnector,
                to: .test)
            // And the certificate-capable PushKit types through a certificate connector.
            let certificate = try fixture.certificateConnector()
            try await send(VoIPNotification(bundleID: bundle, appData: Payload()), via: certificate, to: .test)
            try await send(accessory, via: certificate, to: .test)

            let records = fixture.server.requests
            #expect(records.count == 14)
            #expect(records.allSatisfy { $0.status == 200 })
            #expect(
                records.compactMap { $0[header: "apns-push-type"] } == [
                    "widgets", "accessory", "controls", "location", "fileprovider", "pushtotalk", "voip",
                    "complication",
                    "liveactivity", "liveactivity", "liveactivity", "mdm", "voip", "accessory",
                ])
            #expect(records[1][header: "apns-topic"] == "\(bundle).push-type.accessory")
            #expect(
                records[1].bodyText
                    == #"{"aps":{"encryptedData":"ZW5jcnlwdGVk","sessionIdentifier":"session-1","keyID":"a2V5","messageIndex":"42"}}"#
            )
            #expect(records[11].bodyText == #"{"mdm":"040ac7bf-391a-4a36-a8ab-47bd380afd33"}"#)
        }
    }

    struct Violation: Sendable, CustomTestStringConvertible {
        var name: String
        var headers: [(String, String)]
        var body: String
        var reason: String
        var viaCertificate = false
        var testDescription: String { name }
    }

    static let violations: [Violation] = [
        .init(
            name: "widget payload with an alert",
            headers: [("apns-push-type", "widgets"), ("apns-topic", "com.example.app.push-type.widgets")],
            body: #"{"aps":{"alert":"x"}}"#, reason: "BadRequestPayload"),
        .init(
            name: "accessory messageIndex as a number",
            headers: [("apns-push-type", "accessory"), ("apns-topic", "com.example.app.push-type.accessory")],
            body: #"{"aps":{"encryptedData":"AA==","sessionIdentifier":"s","keyID":"AA==","messageIndex":42}}"#,
            reason: "BadRequestPayload"),
        .init(
            name: "accessory without keyID",
            headers: [("apns-push-type", "accessory"), ("apns-topic", "com.example.app.push-type.accessory")],
            body: #"{"aps":{"encryptedData":"AA==","sessionIdentifier":"s","messageIndex":"42"}}"#,
            reason: "BadRequestPayload"),
        .init(
            name: "accessory on the app's own topic",
            headers: [("apns-push-type", "accessory"), ("apns-topic", "com.example.app")],
            body: #"{"aps":{"encryptedData":"AA==","sessionIdentifier":"s","keyID":"AA==","messageIndex":"42"}}"#,
            reason: "BadTopic"),
        .init(
            name: "controls without suffix",
            headers: [("apns-push-type", "controls"), ("apns-topic", "com.example.app")],
            body: #"{"aps":{"content-changed":true}}"#, reason: "BadTopic"),
        .init(
            name: "location via certificate",
            headers: [("apns-push-type", "location"), ("apns-topic", "com.example.app.location-query")],
            body: #"{"aps":{}}"#, reason: "BadCertificate", viaCertificate: true),
        .init(
            name: "location with content",
            headers: [("apns-push-type", "location"), ("apns-topic", "com.example.app.location-query")],
            body: #"{"aps":{"badge":1}}"#, reason: "BadRequestPayload"),
        .init(
            name: "fileprovider with aps",
            headers: [("apns-push-type", "fileprovider"), ("apns-topic", "com.example.app.pushkit.fileprovider")],
            body: #"{"aps":{},"container-identifier":"c","domain":"d"}"#, reason: "BadRequestPayload"),
        .init(
            name: "mdm via token", headers: [("apns-push-type", "mdm"), ("apns-topic", mdmTopic)],
            body: #"{"mdm":"m"}"#, reason: "InvalidProviderToken"),
        .init(
            name: "mdm topic not a UID", headers: [("apns-push-type", "mdm"), ("apns-topic", "com.example.app")],
            body: #"{"mdm":"m"}"#, reason: "BadTopic", viaCertificate: true),
        .init(
            name: "pushtotalk priority 5",
            headers: [
                ("apns-push-type", "pushtotalk"), ("apns-topic", "com.example.app.voip-ptt"), ("apns-priority", "5"),
                ("apns-expiration", "0"),
            ], body: #"{"activeSpeaker":"a"}"#, reason: "BadPriority"),
        .init(
            name: "pushtotalk without expiration 0",
            headers: [
                ("apns-push-type", "pushtotalk"), ("apns-topic", "com.example.app.voip-ptt"), ("apns-priority", "10"),
            ], body: #"{"activeSpeaker":"a"}"#, reason: "BadExpirationDate"),
        .init(
            name: "pushtotalk with aps",
            headers: [
                ("apns-push-type", "pushtotalk"), ("apns-topic", "com.example.app.voip-ptt"), ("apns-expiration", "0"),
            ], body: #"{"aps":{}}"#, reason: "BadRequestPayload"),
        .init(
            name: "voip over 5120 bytes",
            headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")],
            body: #"{"x":""# + String(repeating: "a", count: 5120) + #""}"#, reason: "PayloadTooLarge"),
        .init(
            name: "voip on the push-to-talk topic",
            headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip-ptt")], body: #"{}"#,
            reason: "BadTopic"),
        .init(
            name: "complication priority 1",
            headers: [
                ("apns-push-type", "complication"), ("apns-topic", "com.example.app.complication"),
                ("apns-priority", "1"),
            ], body: #"{}"#, reason: "BadPriority"),
        .init(
            name: "live activity start without attributes",
            headers: [("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity")],
            body:
                #"{"aps":{"alert":{"title":"t","body":"b"},"content-state":{},"timestamp":1,"event":"start","attributes-type":"A"}}"#,
            reason: "BadRequestPayload"),
        .init(
            name: "live activity both push inputs",
            headers: [("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity")],
            body:
                #"{"aps":{"alert":{"title":"t","body":"b"},"content-state":{},"timestamp":1,"event":"start","attributes-type":"A","attributes":{},"input-push-token":1,"input-push-channel":"c"}}"#,
            reason: "BadRequestPayload"),
        .init(
            name: "live activity dismissal date on update",
            headers: [("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity")],
            body: #"{"aps":{"content-state":{},"timestamp":1,"event":"update","dismissal-date":2}}"#,
            reason: "BadRequestPayload"),
        .init(
            name: "live activity unknown event",
            headers: [("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity")],
            body: #"{"aps":{"content-state":{},"timestamp":1,"event":"pause"}}"#, reason: "BadRequestPayload"),
    ]

    @Test(arguments: violations)
    func mockServerRejectsEachRule(_ violation: Violation) async throws {
        try await Fixture.with { fixture in
            let request = APNsRequest(
                method: .post, service: .device, path: Device.test.path,
                headers: violation.headers.map { .init(name: $0.0, value: $0.1) }, body: Array(violation.body.utf8))
            let response: APNsHTTPResponse
            if violation.viaCertificate {
                response = try await fixture.certificateConnector().performWithoutRuleCheck(request)
            } else {
                response = try await fixture.tokenConnector().performWithoutRuleCheck(request)
            }
            #expect(APNsRejection(status: response.status, body: response.body).reason?.rawValue == violation.reason)
        }
    }
}
