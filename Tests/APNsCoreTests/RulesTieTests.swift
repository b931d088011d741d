import APNsCore
import Foundation
import Testing

/// Each push type's struct agrees with its rules entry (`<Type>+Rules.swift`): the priorities its
/// `Priority` type can express are exactly the allowed ones, its default is the rules' default,
/// and its deliverable conformances are exactly the authentications the rules allow.
@Suite struct RulesTieTests {
    struct Empty: Encodable, Sendable {}

    static func conformances<N: PushNotification>(_ type: N.Type) -> Set<AuthenticationMethod> {
        var methods: Set<AuthenticationMethod> = []
        if type is any TokenDeliverable.Type { methods.insert(.token) }
        if type is any CertificateDeliverable.Type { methods.insert(.certificate) }
        return methods
    }

    static func check<N: PushNotification>(
        _ type: N.Type, expressible: [PushPriority], byDefault: N, broadcastable: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let rules = N.pushType
        #expect(Set(expressible) == rules.allowedPriorities, "\(rules) priorities", sourceLocation: sourceLocation)
        #expect(byDefault.pushPriority == rules.defaultPriority, "\(rules) default priority", sourceLocation: sourceLocation)
        #expect(conformances(type) == rules.authentication, "\(rules) authentication", sourceLocation: sourceLocation)
        #expect((type is any BroadcastDeliverable.Type) == broadcastable, "\(rules) broadcast", sourceLocation: sourceLocation)
        if let required = rules.requiredExpiration {
            #expect(byDefault.expiration?.unixSeconds == required, "\(rules) expiration", sourceLocation: sourceLocation)
        }
    }

    @Test func everyStructMatchesItsRules() {
        let standard = StandardPriority.allCases.map(\.pushPriority)
        let now = Date(timeIntervalSince1970: 1)
        Self.check(
            AlertNotification<NoAppData>.self, expressible: AlertNotification<NoAppData>.Priority.allCases.map(\.pushPriority),
            byDefault: AlertNotification(bundleID: "a.b") { Alert("x") })
        Self.check(BackgroundNotification<NoAppData>.self, expressible: [BackgroundNotification(bundleID: "a.b").pushPriority], byDefault: BackgroundNotification(bundleID: "a.b"))
        Self.check(ComplicationNotification<Empty>.self, expressible: standard, byDefault: ComplicationNotification(bundleID: "a.b", appData: Empty()))
        Self.check(ControlsNotification.self, expressible: standard, byDefault: ControlsNotification(bundleID: "a.b"))
        Self.check(FileProviderNotification.self, expressible: standard, byDefault: FileProviderNotification(bundleID: "a.b", containerIdentifier: "c", domain: "d"))
        Self.check(LocationNotification.self, expressible: standard, byDefault: LocationNotification(bundleID: "a.b"))
        Self.check(MDMNotification.self, expressible: standard, byDefault: MDMNotification(topic: "com.apple.mgmt.x", pushMagic: "m"))
        Self.check(PushToTalkNotification<Empty>.self, expressible: [PushToTalkNotification(bundleID: "a.b", appData: Empty()).pushPriority], byDefault: PushToTalkNotification(bundleID: "a.b", appData: Empty()))
        Self.check(VoIPNotification<Empty>.self, expressible: standard, byDefault: VoIPNotification(bundleID: "a.b", appData: Empty()))
        Self.check(WidgetNotification.self, expressible: standard, byDefault: WidgetNotification(bundleID: "a.b"))
        Self.check(
            LiveActivityNotification<Empty, NoAttributes, LiveActivityEvent.Update>.self, expressible: standard,
            byDefault: LiveActivityNotification(bundleID: "a.b", update: Empty(), timestamp: now), broadcastable: true)
        Self.check(
            LiveActivityNotification<Empty, NoAttributes, LiveActivityEvent.End>.self, expressible: standard,
            byDefault: LiveActivityNotification(bundleID: "a.b", end: Empty(), timestamp: now), broadcastable: true)
        Self.check(
            LiveActivityNotification<Empty, Empty, LiveActivityEvent.Start>.self, expressible: standard,
            byDefault: LiveActivityNotification(bundleID: "a.b", start: Empty(), attributes: Empty(), alert: LiveActivityAlert(title: "t", body: "b"), timestamp: now))
        // Only types the rules say may be broadcast carry a broadcast limit.
        #expect(PushType.allCases.filter { $0.maximumBroadcastPayloadSize != nil } == [.liveactivity])
    }

    @Test func nestedRawJSONIsWrittenAsJSON() throws {
        struct Envelope: Encodable, Sendable { var kind = "game"; var detail: RawJSONObject }
        let notification = AlertNotification(bundleID: "a.b", appData: Envelope(detail: try RawJSONObject(#"{ "round": 2, "names": ["é", "😀"] }"#))) { Alert("x") }
        #expect(try notification.request(to: Device(token: "00aa")).bodyText == #"{"aps":{"alert":"x"},"kind":"game","detail":{"round":2,"names":["é","😀"]}}"#)
        let start = LiveActivityNotification(
            bundleID: "a.b", start: try RawJSONObject(#"{"score":1}"#), attributes: Envelope(detail: try RawJSONObject("{}")),
            alert: LiveActivityAlert(title: "t", body: "b"), timestamp: Date(timeIntervalSince1970: 5))
        #expect(try start.request(to: Device(token: "00aa")).bodyText == #"{"aps":{"alert":{"title":"t","body":"b"},"content-state":{"score":1},"timestamp":5,"event":"start","attributes-type":"Envelope","attributes":{"kind":"game","detail":{}}}}"#)
    }
}
