import APNs
import Foundation
import Testing

/// Exact JSON and headers for every push type other than alert and background.
@Suite struct PushTypeRequestTests {
    let device = try! Device(token: "abcd")

    func headers(_ request: APNsRequest) -> [String] { request.headers.map(\.description) }

    @Test func widgetsAndControls() throws {
        let widget = try WidgetNotification(bundleID: "com.example.app", priority: .powerConsiderate).request(
            to: device)
        #expect(widget.bodyText == #"{"aps":{"content-changed":true}}"#)
        #expect(
            headers(widget) == [
                "apns-push-type: widgets", "apns-topic: com.example.app.push-type.widgets", "apns-priority: 5",
            ])
        let controls = try ControlsNotification(bundleID: "com.example.app").request(to: device)
        #expect(controls.bodyText == #"{"aps":{"content-changed":true}}"#)
        #expect(
            headers(controls) == [
                "apns-push-type: controls", "apns-topic: com.example.app.push-type.controls", "apns-priority: 10",
            ])
    }

    /// Apple's sample, field for field: every value a string, `messageIndex` too.
    @Test func accessory() throws {
        let request = try AccessoryNotification(
            bundleID: "com.example.companion", encryptedData: "ZW5jcnlwdGVk", sessionIdentifier: "session-1",
            keyID: "a2V5", messageIndex: 18_446_744_073_709_551_615, priority: .powerConsiderate,
            expiration: .immediately
        ).request(to: device)
        #expect(
            request.bodyText
                == #"{"aps":{"encryptedData":"ZW5jcnlwdGVk","sessionIdentifier":"session-1","keyID":"a2V5","messageIndex":"18446744073709551615"}}"#
        )
        #expect(
            headers(request) == [
                "apns-push-type: accessory", "apns-topic: com.example.companion.push-type.accessory",
                "apns-priority: 5", "apns-expiration: 0",
            ])
        #expect(request.path == "/3/device/abcd")
    }

    /// What an accessory sends is passed on as it came; what it cannot have sent is refused
    /// before any byte is written, naming the field.
    @Test func accessoryFieldsAreCheckedBeforeSending() throws {
        func build(encrypted: String = "AA==", session: String = "s", key: String = "AA==") throws(APNsError) {
            _ = try AccessoryNotification(
                bundleID: "com.example.companion", encryptedData: encrypted, sessionIdentifier: session, keyID: key,
                messageIndex: 0
            ).request(to: device)
        }
        for good in ["AA==", "AAA=", "AAAA", "ab+/", "YWJjZA==", "AB=="] {
            #expect(throws: Never.self) { try build(encrypted: good, key: good) }
        }
        for bad in ["", "A", "AA=", "A===", "====", "AB=A", "ab-_", "YWJj\nZA==", "YWJjZA== "] {
            #expect(throws: APNsError.validation(.invalidAccessoryField("encryptedData")), "\(bad)") {
                try build(encrypted: bad)
            }
            #expect(throws: APNsError.validation(.invalidAccessoryField("keyID")), "\(bad)") { try build(key: bad) }
        }
        #expect(throws: APNsError.validation(.invalidAccessoryField("sessionIdentifier"))) { try build(session: "") }
        #expect(
            APNsValidationError.invalidAccessoryField("keyID").description
                == "The accessory response's keyID is not standard base64: pass it exactly as the accessory sent it (A–Z, a–z, 0–9, + and /, padded with = to a multiple of 4)."
        )
        // A topic passed where the bundle id belongs is refused, as for every suffixed push type.
        #expect(throws: APNsError.self) {
            try AccessoryNotification(
                bundleID: "com.example.companion.push-type.accessory", encryptedData: "AA==", sessionIdentifier: "s",
                keyID: "AA==", messageIndex: 0
            ).request(to: device)
        }
    }

    @Test func location() throws {
        let request = try LocationNotification(bundleID: "com.example.app", expiration: .immediately).request(
            to: device)
        #expect(request.bodyText == #"{"aps":{}}"#)
        #expect(
            headers(request) == [
                "apns-push-type: location", "apns-topic: com.example.app.location-query", "apns-priority: 10",
                "apns-expiration: 0",
            ])
    }

    @Test func fileProvider() throws {
        let request = try FileProviderNotification(
            bundleID: "com.example.files", containerIdentifier: "<container>", domain: "<domain>"
        ).request(to: device)
        #expect(request.bodyText == #"{"container-identifier":"<container>","domain":"<domain>"}"#)
        #expect(
            headers(request) == [
                "apns-push-type: fileprovider", "apns-topic: com.example.files.pushkit.fileprovider",
                "apns-priority: 10",
            ])
    }

    @Test func mdm() throws {
        let request = try MDMNotification(
            topic: "com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5",
            pushMagic: "040ac7bf-391a-4a36-a8ab-47bd380afd33"
        ).request(to: device)
        #expect(request.bodyText == #"{"mdm":"040ac7bf-391a-4a36-a8ab-47bd380afd33"}"#)
        #expect(
            headers(request) == [
                "apns-push-type: mdm", "apns-topic: com.apple.mgmt.External.18a16429-886b-41f1-a5e5-f8f8a3b9e5e5",
                "apns-priority: 10",
            ])
        #expect(throws: APNsError.validation(.invalidMDMTopic("com.example.app"))) {
            try MDMNotification(topic: "com.example.app", pushMagic: "x").request(to: device)
        }
    }

    struct Speaker: Encodable, Sendable { var activeSpeaker: String }

    @Test func pushToTalkHasFixedPriorityAndExpiration() throws {
        let request = try PushToTalkNotification(
            bundleID: "com.example.radio", appData: Speaker(activeSpeaker: "The name of the active speaker")
        ).request(to: device)
        #expect(request.bodyText == #"{"activeSpeaker":"The name of the active speaker"}"#)
        #expect(
            headers(request) == [
                "apns-push-type: pushtotalk", "apns-topic: com.example.radio.voip-ptt", "apns-priority: 10",
                "apns-expiration: 0",
            ])
        struct Sneaky: Encodable, Sendable { var aps = 1 }
        #expect(throws: APNsError.validation(.reservedAppDataKey("aps"))) {
            try PushToTalkNotification(bundleID: "a", appData: Sneaky()).request(to: device)
        }
    }

    struct Call: Encodable, Sendable { var caller: String; var id: UUID }

    @Test func voipAllowsFiveKilobytes() throws {
        let id = UUID(uuidString: "7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C")!
        let request = try VoIPNotification(
            bundleID: "com.example.phone", appData: Call(caller: "Ana", id: id), expiration: .immediately
        ).request(to: device)
        #expect(request.bodyText == #"{"caller":"Ana","id":"7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C"}"#)
        #expect(
            headers(request) == [
                "apns-push-type: voip", "apns-topic: com.example.phone.voip", "apns-priority: 10", "apns-expiration: 0",
            ])
        struct Big: Encodable, Sendable { var blob: String }
        let fits = VoIPNotification(bundleID: "a", appData: Big(blob: String(repeating: "x", count: 5120 - 11)))
        #expect(try fits.payload().count == 5120)
        #expect(throws: APNsError.validation(.payloadTooLarge(pushType: .voip, size: 5121, limit: 5120))) {
            try VoIPNotification(bundleID: "a", appData: Big(blob: String(repeating: "x", count: 5120 - 10))).request(
                to: device)
        }
    }

    struct Forecast: Encodable, Sendable { var high: Int; var low: Int }

    @Test func complication() throws {
        let request = try ComplicationNotification(
            bundleID: "com.example.weather", appData: Forecast(high: 21, low: 12), priority: .powerConsiderate
        ).request(to: device)
        #expect(request.bodyText == #"{"high":21,"low":12}"#)
        #expect(
            headers(request) == [
                "apns-push-type: complication", "apns-topic: com.example.weather.complication", "apns-priority: 5",
            ])
        #expect(try ComplicationNotification(bundleID: "a", appData: NoAppData()).request(to: device).bodyText == "{}")
    }
}

/// Apple's Live Activity examples (protocol reference, Live Activities), in the canonical key order.
@Suite struct LiveActivityRequestTests {
    let device = try! Device(token: "abcd")

    struct HeroState: Codable, Sendable, Equatable {
        var currentHealthLevel: Double
        var eventDescription: String
    }

    struct HeroAttributes: Codable, Sendable, Equatable {
        var currentHealthLevel: Double
        var eventDescription: String
    }

    let timestamp = Date(timeIntervalSince1970: 1_685_952_000)

    @Test func appleUpdateExample() throws {
        let notification = LiveActivityNotification(
            bundleID: "com.example.game",
            update: HeroState(currentHealthLevel: 0.0, eventDescription: "Power Panda has been knocked down!"),
            timestamp: timestamp,
            alert: LiveActivityAlert(
                title: .localized(key: "%@ is knocked down!", arguments: ["Power Panda"]),
                body: .localized(key: "Use a potion to heal %@!", arguments: ["Power Panda"]),
                sound: "HeroDown.mp4"))
        let request = try notification.request(to: device)
        #expect(
            request.bodyText
                == #"{"aps":{"alert":{"title":{"loc-key":"%@ is knocked down!","loc-args":["Power Panda"]},"body":{"loc-key":"Use a potion to heal %@!","loc-args":["Power Panda"]},"sound":"HeroDown.mp4"},"content-state":{"currentHealthLevel":0,"eventDescription":"Power Panda has been knocked down!"},"timestamp":1685952000,"event":"update"}}"#
        )
        #expect(
            request.headers.map(\.description) == [
                "apns-push-type: liveactivity", "apns-topic: com.example.game.push-type.liveactivity",
                "apns-priority: 10",
            ])
    }

    @Test func appleStartExample() throws {
        let notification = LiveActivityNotification(
            bundleID: "com.example.game",
            start: HeroState(currentHealthLevel: 100, eventDescription: "Adventure has begun!"),
            attributesType: "AdventureAttributes",
            attributes: HeroAttributes(currentHealthLevel: 100, eventDescription: "Adventure has begun!"),
            alert: LiveActivityAlert(
                title: "Adventure Started", body: "Power Panda is on an adventure!", sound: "chime.aiff"),
            timestamp: timestamp, pushInput: .token, staleDate: timestamp.addingTimeInterval(3600), relevanceScore: 100)
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"alert":{"title":"Adventure Started","body":"Power Panda is on an adventure!","sound":"chime.aiff"},"relevance-score":100,"stale-date":1685955600,"content-state":{"currentHealthLevel":100,"eventDescription":"Adventure has begun!"},"timestamp":1685952000,"event":"start","attributes-type":"AdventureAttributes","attributes":{"currentHealthLevel":100,"eventDescription":"Adventure has begun!"},"input-push-token":1}}"#
        )
        var channelled = notification
        channelled.pushInput = .channel(try BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.game"))
        #expect(
            try channelled.request(to: device).bodyText.hasSuffix(#""input-push-channel":"dHN0LXNyY2gtY2hubA=="}}"#))
    }

    @Test func appleEndExample() throws {
        let notification = LiveActivityNotification(
            bundleID: "com.example.game",
            end: HeroState(currentHealthLevel: 0, eventDescription: "Adventure over! Power Panda is taking a nap."),
            timestamp: timestamp, dismissalDate: Date(timeIntervalSince1970: 1_685_966_400.7))
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"content-state":{"currentHealthLevel":0,"eventDescription":"Adventure over! Power Panda is taking a nap."},"timestamp":1685952000,"event":"end","dismissal-date":1685966400}}"#
        )
    }

    struct Delivery: Codable, Sendable, Equatable {
        var eta: Date
        var courier: URL
        var photo: Data
        var stops: [Int]
    }

    @Test func contentStateDecodesWithJSONDecoderDefaults() throws {
        let state = Delivery(
            eta: Date(timeIntervalSinceReferenceDate: 720_000_000.25), courier: URL(string: "https://example.com/c/7")!,
            photo: Data([0xDE, 0xAD]), stops: [3, 1])
        let body = try LiveActivityNotification(bundleID: "a", update: state, timestamp: timestamp).payload()
        // What the device does: decode content-state with JSONDecoder's default strategies.
        struct Envelope: Decodable {
            var aps: APS;
            struct APS: Decodable {
                var contentState: Delivery; enum CodingKeys: String, CodingKey { case contentState = "content-state" }
            }
        }
        #expect(try JSONDecoder().decode(Envelope.self, from: Data(body)).aps.contentState == state)
        #expect(
            String(decoding: body, as: UTF8.self).contains(
                #""content-state":{"eta":720000000.25,"courier":"https://example.com/c/7","photo":"3q0=","stops":[3,1]}"#
            ))
    }

    @Test func liveActivityValidation() {
        #expect(throws: APNsError.validation(.notAnObject(key: "content-state"))) {
            try LiveActivityNotification(bundleID: "a", update: [1, 2], timestamp: timestamp).request(to: device)
        }
        #expect(throws: APNsError.validation(.invalidDate(key: "timestamp"))) {
            try LiveActivityNotification(
                bundleID: "a", update: HeroState(currentHealthLevel: 1, eventDescription: ""),
                timestamp: Date(timeIntervalSince1970: -5)
            ).request(to: device)
        }
        #expect(throws: APNsError.validation(.nonFiniteNumber(path: "aps.content-state.currentHealthLevel"))) {
            try LiveActivityNotification(
                bundleID: "a", update: HeroState(currentHealthLevel: .nan, eventDescription: ""), timestamp: timestamp
            ).request(to: device)
        }
    }
}
