@_spi(Description) import APNs
import Foundation
import Testing

/// The one description of a notification that the `apns` command and the push gateway read their
/// input into: every push type built from it is the typed struct's request exactly, and every rule
/// it checks names its field.
@Suite struct NotificationDescriptionTests {
    let device = try! Device(token: "abcd")
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let empty = try! RawJSONObject("{}")

    /// The smallest description of each push type, and the typed notification it must equal.
    func smallest(_ name: PushType.Name) throws -> (NotificationDescription, any PushNotification) {
        var description = NotificationDescription(pushType: name.rawValue)
        description.app = name == .mdm ? "com.apple.mgmt.External.1" : "com.example.app"
        let app = "com.example.app"
        let state = try RawJSONObject(#"{"score":1}"#)
        switch name {
        case .alert:
            description.alert = .init(body: .text("Hi"))
            return (description, AlertNotification(bundleID: app) { Alert { Body("Hi") } })
        case .background: return (description, BackgroundNotification(bundleID: app, appData: empty))
        case .voip: return (description, VoIPNotification(bundleID: app, appData: empty))
        case .complication: return (description, ComplicationNotification(bundleID: app, appData: empty))
        case .pushtotalk: return (description, PushToTalkNotification(bundleID: app, appData: empty))
        case .widgets: return (description, WidgetNotification(bundleID: app))
        case .controls: return (description, ControlsNotification(bundleID: app))
        case .location: return (description, LocationNotification(bundleID: app))
        case .fileprovider:
            description.containerIdentifier = "c"
            description.domain = "d"
            return (description, FileProviderNotification(bundleID: app, containerIdentifier: "c", domain: "d"))
        case .mdm:
            description.pushMagic = "m"
            return (description, MDMNotification(topic: "com.apple.mgmt.External.1", pushMagic: "m"))
        case .accessory:
            description.encryptedData = "ZW5j"
            description.sessionIdentifier = "s"
            description.keyID = "a2V5"
            description.messageIndex = 7
            return (
                description,
                AccessoryNotification(
                    bundleID: app, encryptedData: "ZW5j", sessionIdentifier: "s", keyID: "a2V5", messageIndex: 7)
            )
        case .liveactivity:
            description.event = "update"
            description.contentState = state
            return (description, LiveActivityNotification(bundleID: app, update: state, timestamp: now))
        }
    }

    @Test func everyPushTypeIsItsTypedStructsRequestExactly() throws {
        for name in PushType.Name.allCases {
            let (description, expected) = try smallest(name)
            let built = try description.notification(now: now)
            #expect(type(of: built).pushType == name.pushType)
            #expect(try built.request(to: device) == expected.request(to: device), "\(name)")
        }
    }

    @Test func thePushTypesAreTheEnumsCases() {
        #expect(PushType.allCases.map(\.rawValue) == PushType.Name.allCases.map(\.rawValue))
        #expect(PushType.allCases.map(\.rawValue) == PushType.allCases.map(\.rawValue).sorted())
        for name in PushType.Name.allCases { #expect(PushType(rawValue: name.rawValue) == name.pushType) }
    }

    /// Each header field given is the typed notification's, checked by the push type's rules.
    @Test func theHeadersAreCheckedByThePushType() throws {
        var description = try smallest(.widgets).0
        description.priority = 5
        description.expiration = 0
        description.collapseID = "score"
        description.apnsID = "123e4567-e89b-12d3-a456-4266554400a0"
        let request = try description.notification(now: now).request(to: device)
        #expect(
            request.headers.map(\.description) == [
                "apns-push-type: widgets", "apns-topic: com.example.app.push-type.widgets", "apns-priority: 5",
                "apns-expiration: 0", "apns-id: 123e4567-e89b-12d3-a456-4266554400a0", "apns-collapse-id: score",
            ])
        description.priority = 1
        let refused = #expect(throws: NotificationDescription.Problem.self) { try description.notification(now: now) }
        #expect(refused?.field == .priority)
        #expect(refused?.form == .sentence)
        #expect(refused?.message(naming: \.rawValue) == "Priority 1 is not allowed for widgets pushes: use 10 or 5.")
    }

    /// A field given to a push type that does not take it is refused by name, and the message says
    /// which push types take it — for every push type and every field.
    @Test func everyMisplacedFieldIsRefusedByName() throws {
        for name in PushType.Name.allCases {
            let allowed = NotificationField.fields(of: name)
            // The push type and the app are given by every description; which field names the app
            // (bundle-id or topic) is the front end's to say.
            for field in NotificationField.allCases
            where !allowed.contains(field) && ![.pushType, .bundleID, .topic].contains(field) {
                var description = try smallest(name).0
                set(field, in: &description)
                let refused = #expect(throws: NotificationDescription.Problem.self, "\(name) \(field)") {
                    try description.notification(now: now)
                }
                #expect(refused?.field == field, "\(name) \(field)")
                #expect(
                    refused?.message(naming: \.rawValue)
                        == "does not apply to \(name.rawValue) (it belongs to \(field.pushTypes.map(\.rawValue).joined(separator: ", ")))",
                    "\(name) \(field)")
            }
        }
    }

    /// Gives `field` some value.
    func set(_ field: NotificationField, in description: inout NotificationDescription) {
        switch field {
        case .pushType, .bundleID, .topic: description.app = "x.y"
        case .priority: description.priority = 10
        case .expiration: description.expiration = 1
        case .collapseID: description.collapseID = "c"
        case .apnsID: description.apnsID = "x"
        case .alert: description.alert = .init(body: .text("x"))
        case .badge: description.badge = 1
        case .sound: description.sound = .default
        case .threadID: description.threadID = "x"
        case .category: description.category = "x"
        case .interruptionLevel: description.interruptionLevel = "active"
        case .relevanceScore: description.relevanceScore = 1
        case .contentAvailable: description.contentAvailable = true
        case .mutableContent: description.mutableContent = true
        case .targetContentID: description.targetContentID = "x"
        case .filterCriteria: description.filterCriteria = "x"
        case .appData: description.appData = empty
        case .containerIdentifier: description.containerIdentifier = "x"
        case .domain: description.domain = "x"
        case .encryptedData: description.encryptedData = "x"
        case .sessionIdentifier: description.sessionIdentifier = "x"
        case .keyID: description.keyID = "x"
        case .messageIndex: description.messageIndex = 1
        case .pushMagic: description.pushMagic = "x"
        case .event: description.event = "x"
        case .contentState: description.contentState = empty
        case .timestamp: description.timestamp = 1
        case .dismissalDate: description.dismissalDate = 1
        case .staleDate: description.staleDate = 1
        case .attributesType: description.attributesType = "x"
        case .attributes: description.attributes = empty
        case .inputPushToken: description.inputPushToken = true
        case .inputPushChannel: description.inputPushChannel = "x"
        }
    }

    /// The rules a description itself can break, each naming its field in the front end's words.
    @Test func problemsNameTheirFieldsInTheFrontEndsWords() throws {
        let quoted: (NotificationField) -> String = { "\"\($0.rawValue)\"" }
        var start = try smallest(.liveactivity).0
        start.event = "start"
        start.attributesType = "Score"
        start.attributes = empty
        var problem = #expect(throws: NotificationDescription.Problem.self) { try start.notification(now: now) }
        #expect(problem?.field == .alert)
        #expect(problem?.message(naming: quoted) == "a Live Activity start needs an alert with a title and a body")
        start.alert = .init(title: .text("T"), subtitle: .text("S"), body: .text("B"))
        problem = #expect(throws: NotificationDescription.Problem.self) { try start.notification(now: now) }
        #expect(problem?.part == .subtitle)
        start.alert?.subtitle = nil
        start.inputPushToken = true
        start.inputPushChannel = "dHN0"
        problem = #expect(throws: NotificationDescription.Problem.self) { try start.notification(now: now) }
        #expect(problem?.message(naming: quoted) == #"give "input-push-token" or "input-push-channel", not both"#)
        #expect(
            problem?.message(naming: { "--" + $0.rawValue })
                == "give --input-push-token or --input-push-channel, not both")
        start.inputPushToken = nil
        #expect(try start.notification(now: now).request(to: device).bodyText.contains(#""input-push-channel":"dHN0""#))

        var update = try smallest(.liveactivity).0
        update.dismissalDate = 1
        problem = #expect(throws: NotificationDescription.Problem.self) { try update.notification(now: now) }
        #expect(problem?.field == .dismissalDate)
        #expect(problem?.form == .predicate)
        #expect(problem?.message(naming: quoted) == "belongs to the end event")

        var accessory = try smallest(.accessory).0
        accessory.messageIndex = -1
        problem = #expect(throws: NotificationDescription.Problem.self) { try accessory.notification(now: now) }
        #expect(problem?.message(naming: quoted) == "is negative; give 0 or more")
        accessory.messageIndex = nil
        problem = #expect(throws: NotificationDescription.Problem.self) { try accessory.notification(now: now) }
        #expect(problem?.message(naming: quoted) == #"accessory needs the ratchet's "message-index""#)

        var unknown = NotificationDescription(pushType: "shout")
        unknown.app = "a.b"
        problem = #expect(throws: NotificationDescription.Problem.self) { try unknown.notification(now: now) }
        #expect(problem?.field == .pushType)
        #expect(
            problem?.message(naming: quoted).hasPrefix("shout is not an APNs push type; use one of accessory,") == true)

        var noApp = try smallest(.mdm).0
        noApp.app = ""
        problem = #expect(throws: NotificationDescription.Problem.self) { try noApp.notification(now: now) }
        #expect(problem?.field == .topic)
        #expect(problem?.message(naming: quoted) == "is missing; give the app's MDM topic")

        var talk = try smallest(.pushtotalk).0
        talk.expiration = 5
        problem = #expect(throws: NotificationDescription.Problem.self) { try talk.notification(now: now) }
        #expect(problem?.field == .expiration)
    }

    /// With the payload given whole by the caller, the payload's own fields may be missing; the
    /// headers are still built from the description.
    @Test func aReplacedPayloadNeedsNoPayloadFields() throws {
        for name in [PushType.Name.fileprovider, .mdm, .accessory, .liveactivity] {
            var description = NotificationDescription(pushType: name.rawValue)
            description.app = name == .mdm ? "com.apple.mgmt.External.1" : "com.example.app"
            #expect(throws: NotificationDescription.Problem.self, "\(name)") { try description.notification(now: now) }
            description.priority = 5
            let request = try description.notification(now: now, payload: .replaced).request(to: device)
            #expect(request.headers.contains { $0.description == "apns-priority: 5" }, "\(name)")
        }
    }

    /// A Live Activity without a timestamp gets `now`.
    @Test func aLiveActivityWithoutTimestampGetsNow() throws {
        let body = try smallest(.liveactivity).0.notification(now: now).request(to: device).bodyText
        #expect(body == #"{"aps":{"content-state":{"score":1},"timestamp":1700000000,"event":"update"}}"#)
    }
}
