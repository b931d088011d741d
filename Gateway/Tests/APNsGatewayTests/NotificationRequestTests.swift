import APNs
@testable import APNsGateway
import Foundation
import Testing

/// Request bodies read into typed notifications: what is accepted is stored exactly, and what is
/// refused names the field and the rule.
@Suite struct NotificationRequestTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    static let other = "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    func read(_ json: String, maximumDevices: Int = 10) throws(RequestProblem) -> NotificationRequest {
        try NotificationRequest(
            body: Array(json.utf8), maximumDevices: maximumDevices, now: Date(timeIntervalSince1970: 1_700_000_000))
    }

    func problem(_ json: String, maximumDevices: Int = 10) -> RequestProblem? {
        do {
            _ = try read(json, maximumDevices: maximumDevices)
            return nil
        } catch {
            return error
        }
    }

    @Test func anAlertIsStoredCompactWithoutItsDevicesAndBuildsTheLibrarysRequest() throws {
        let request = try read(
            """
            {"push-type": "alert", "bundle-id": "com.example.app", "priority": 5, "collapse-id": "score",
             "alert": {"title": "Goal", "body": "2-1"}, "badge": 3, "sound": "default", "data": {"match": 7},
             "devices": ["\(Self.token)", "\(Self.other.uppercased())"]}
            """)
        #expect(request.pushType == .alert)
        #expect(request.app == "com.example.app")
        #expect(request.devices.map(\.token) == [Self.token, Self.other])
        #expect(
            request.storedJSON
                == #"{"alert":{"body":"2-1","title":"Goal"},"badge":3,"bundle-id":"com.example.app","collapse-id":"score","data":{"match":7},"priority":5,"push-type":"alert","sound":"default"}"#
        )
        let wire = try request.notification.request(to: request.devices[0])
        #expect(
            wire.bodyText == #"{"aps":{"alert":{"title":"Goal","body":"2-1"},"badge":3,"sound":"default"},"match":7}"#)
        #expect(
            wire.headers.map { "\($0.name): \($0.value)" } == [
                "apns-push-type: alert", "apns-topic: com.example.app", "apns-priority: 5", "apns-collapse-id: score",
            ])
        // What the sender reads back builds the same request.
        let again = try NotificationRequest.notification(storedJSON: request.storedJSON)
        #expect(try again.notification.request(to: request.devices[0]) == wire)
    }

    /// Everything the library's alert expresses: localized title, subtitle and body with their
    /// arguments, a launch image, a critical sound with its volume, filter criteria,
    /// `content-available` and `mutable-content`, and the client's own apns-id for its one device;
    /// the wire bytes are the library's.
    @Test func aLocalizedCriticalAlertWithItsOwnApnsIDIsTheLibrarysRequest() throws {
        let id = "123e4567-e89b-12d3-a456-4266554400a0"
        let request = try read(
            """
            {"push-type": "alert", "bundle-id": "com.example.app", "apns-id": "\(id)",
             "alert": {"title-loc-key": "GAME_TITLE", "title-loc-args": ["Lions"], "subtitle": "Final",
                       "loc-key": "GAME_SCORE", "loc-args": ["2", "1"], "launch-image": "score.png"},
             "sound": {"critical": 1, "name": "alarm.caf", "volume": 0.5}, "interruption-level": "critical",
             "filter-criteria": "sports", "content-available": true, "mutable-content": true,
             "devices": ["\(Self.token)"]}
            """)
        let wire = try request.notification.request(to: request.devices[0])
        let expected = AlertNotification(bundleID: "com.example.app", apnsID: APNsID(id)) {
            Alert {
                Title(localizedKey: "GAME_TITLE", arguments: ["Lions"])
                Subtitle("Final")
                Body(localizedKey: "GAME_SCORE", arguments: ["2", "1"])
                LaunchImage("score.png")
            }
            Sound.critical("alarm.caf", volume: 0.5)
            ContentAvailable()
            MutableContent()
            InterruptionLevel.critical
            FilterCriteria("sports")
        }
        #expect(try expected.request(to: request.devices[0]) == wire)
        #expect(
            wire.bodyText
                == #"{"aps":{"alert":{"subtitle":"Final","launch-image":"score.png","title-loc-key":"GAME_TITLE","title-loc-args":["Lions"],"loc-key":"GAME_SCORE","loc-args":["2","1"]},"sound":{"critical":1,"name":"alarm.caf","volume":0.5},"content-available":1,"mutable-content":1,"interruption-level":"critical","filter-criteria":"sports"}}"#
        )
        let stored = try NotificationRequest.notification(storedJSON: request.storedJSON)
        #expect(stored.apnsID?.description == id)
        #expect(try stored.notification.request(to: request.devices[0]) == wire)
    }

    /// App data is written back by the library's JSON writer: its escaping (`\u000a`, not `\n`)
    /// and numbers (`2.5`, `3` for 3.0) are those of every payload.
    @Test func appDataFollowsTheLibrarysJSONRules() throws {
        let request = try read(
            """
            {"push-type": "background", "bundle-id": "com.example.app",
             "data": {"z": [true, null, 3.0, 2.5, -7], "a": "line\\nbreak \\"q\\" \\u0001 é/"},
             "devices": ["\(Self.token)"]}
            """)
        let wire = try request.notification.request(to: request.devices[0])
        #expect(
            wire.bodyText
                == #"{"aps":{"content-available":1},"a":"line\u000abreak \"q\" \u0001 é/","z":[true,null,3,2.5,-7]}"#)
    }

    @Test func everyPushTypeIsReadIntoItsOwnStruct() throws {
        let bodies: [(String, String)] = [
            (#""push-type":"background","bundle-id":"com.example.app","data":{"k":1}"#, "com.example.app"),
            (#""push-type":"voip","bundle-id":"com.example.app","data":{"caller":"Ann"}"#, "com.example.app.voip"),
            (#""push-type":"complication","bundle-id":"com.example.app""#, "com.example.app.complication"),
            (#""push-type":"pushtotalk","bundle-id":"com.example.app""#, "com.example.app.voip-ptt"),
            (#""push-type":"widgets","bundle-id":"com.example.app""#, "com.example.app.push-type.widgets"),
            (#""push-type":"controls","bundle-id":"com.example.app""#, "com.example.app.push-type.controls"),
            (#""push-type":"location","bundle-id":"com.example.app""#, "com.example.app.location-query"),
            (
                #""push-type":"fileprovider","bundle-id":"com.example.app","container-identifier":"c","domain":"d""#,
                "com.example.app.pushkit.fileprovider"
            ),
            (#""push-type":"mdm","topic":"com.apple.mgmt.External.1","push-magic":"m""#, "com.apple.mgmt.External.1"),
            (
                #""push-type":"accessory","bundle-id":"com.example.app","encrypted-data":"ZW5j","session-identifier":"s","key-id":"a2V5","message-index":42"#,
                "com.example.app.push-type.accessory"
            ),
            (
                #""push-type":"liveactivity","bundle-id":"com.example.app","event":"update","content-state":{"n":1}"#,
                "com.example.app.push-type.liveactivity"
            ),
        ]
        for (fields, topic) in bodies {
            let request = try read("{\(fields),\"devices\":[\"\(Self.token)\"]}")
            #expect(request.notification.topic == topic, "\(fields)")
        }
    }

    @Test func aLiveActivityWithoutTimestampGetsTheAcceptanceTime() throws {
        let request = try read(
            #"{"push-type":"liveactivity","bundle-id":"a.b","event":"end","content-state":{},"devices":["\#(Self.token)"]}"#
        )
        #expect(request.storedJSON.contains(#""timestamp":1700000000"#))
    }

    @Test func refusalsNameTheFieldAndTheRule() {
        let device = "\"devices\":[\"\(Self.token)\"]"
        let cases: [(String, RequestProblem)] = [
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"alert\":{\"title\":\"T\",\"title-loc-key\":\"K\"},\(device)}",
                RequestProblem(
                    field: "alert.title-loc-key", "give title or title-loc-key (localized by the app), not both")
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"alert\":{\"loc-args\":[\"1\"]},\(device)}",
                RequestProblem(field: "alert.loc-args", "needs loc-key: the arguments fill its format")
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"alert\":\"x\",\"sound\":{\"critical\":1,\"volume\":2},\(device)}",
                RequestProblem(field: "sound.volume", "2.0 is not between 0 and 1")
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"alert\":\"x\",\"apns-id\":\"123e4567-e89b-12d3-a456-4266554400a0\",\"devices\":[\"\(Self.token)\",\"\(Self.other)\"]}",
                RequestProblem(
                    field: "apns-id",
                    "one apns-id names one push, and this request gives 2 tokens: send one device per request with its own apns-id, or leave it out (the gateway gives each device-send its own, the same on every attempt)"
                )
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"alert\":\"x\",\"delivery\":\"exactly-once\",\(device)}",
                RequestProblem(
                    field: "delivery",
                    "exactly-once is not a delivery semantics; give at-least-once (the default: after a crash, what may have been sent is sent again) or at-most-once (it is reported failed with delivery unknown instead)"
                )
            ),
            ("[1]", RequestProblem("the body is an array; give a JSON object")),
            (
                #"{"push-type":"alert","bundle-id":"a.b"}"#,
                RequestProblem(
                    field: "devices",
                    #"give the device tokens to send to: "devices": ["<hex token>", …], or a broadcast channel: "channel": "<channel id>""#
                )
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"channel\":\"dHN0\"}",
                RequestProblem(
                    field: "channel",
                    #"a broadcast channel takes a liveactivity update or end; send alert to "devices""#)
            ),
            (
                "{\"push-type\":\"liveactivity\",\"bundle-id\":\"a.b\",\"event\":\"update\",\"content-state\":{},\"channel\":\"dHN0\",\(device)}",
                RequestProblem(field: "channel", #"give "devices" or "channel", not both"#)
            ),
            (
                #"{"push-type":"alert","bundle-id":"a.b","devices":[]}"#,
                RequestProblem(field: "devices", "is empty; give an array of 1 to 10 hex device tokens")
            ),
            (
                #"{"push-type":"alert","bundle-id":"a.b","devices":["xyz"]}"#,
                RequestProblem(
                    field: "devices[0]",
                    "Invalid device token: character 1 is not a hex digit: a device token is hex (0-9, a-f), as the app reported it, not a bundle id, user id or a base64 string."
                )
            ),
            (
                "{\"push-type\":\"shout\",\"bundle-id\":\"a.b\",\(device)}",
                RequestProblem(
                    field: "push-type",
                    "shout is not an APNs push type; use one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"titel\":\"x\",\(device)}",
                RequestProblem(field: "titel", "is not a field of a notification request; see openapi.yaml")
            ),
            (
                "{\"push-type\":\"background\",\"bundle-id\":\"a.b\",\"alert\":\"x\",\(device)}",
                RequestProblem(field: "alert", "does not apply to background (it belongs to alert, liveactivity)")
            ),
            (
                "{\"push-type\":\"background\",\"bundle-id\":\"a.b\",\"priority\":10,\(device)}",
                RequestProblem(field: "priority", "Priority 10 is not allowed for background pushes: it is always 5.")
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"priority\":7,\(device)}",
                RequestProblem(field: "priority", "Priority 7 is not allowed for alert pushes: use 10, 5 or 1.")
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"badge\":\"3\",\(device)}",
                RequestProblem(field: "badge", "is a string; give a whole number")
            ),
            (
                "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"data\":{\"aps\":1},\(device)}",
                RequestProblem(field: "data", APNsValidationError.reservedAppDataKey("aps").description)
            ),
            (
                "{\"push-type\":\"mdm\",\"bundle-id\":\"a.b\",\"push-magic\":\"m\",\(device)}",
                RequestProblem(
                    field: "bundle-id",
                    #"mdm is addressed by "topic" (the MDM push certificate's topic), not a bundle id"#)
            ),
            (
                "{\"push-type\":\"liveactivity\",\"bundle-id\":\"a.b\",\"event\":\"update\",\"content-state\":{},\"dismissal-date\":1,\(device)}",
                RequestProblem(field: "dismissal-date", "belongs to the end event")
            ),
            (
                "{\"push-type\":\"liveactivity\",\"bundle-id\":\"a.b\",\"event\":\"update\",\"content-state\":{},\"alert\":\"x\",\"sound\":{},\(device)}",
                RequestProblem(field: "sound", "is an object; give a string")
            ),
            (
                "{\"push-type\":\"widgets\",\"bundle-id\":\"a.b\",\"data\":{},\(device)}",
                RequestProblem(
                    field: "data",
                    "does not apply to widgets (it belongs to alert, background, complication, pushtotalk, voip)")
            ),
        ]
        for (body, expected) in cases {
            #expect(problem(body) == expected, "\(body)")
        }
        let many = (0..<11).map { "\"" + String(format: "%064x", $0) + "\"" }.joined(separator: ",")
        #expect(
            problem(#"{"push-type":"alert","bundle-id":"a.b","devices":[\#(many)]}"#)
                == RequestProblem(field: "devices", "has 11 tokens; at most 10 go in one request: split it"))
    }

    @Test func aLiveActivityUpdateCanGoToABroadcastChannel() throws {
        let request = try read(
            #"{"push-type":"liveactivity","bundle-id":"a.b","event":"update","content-state":{"n":1},"channel":"dHN0LXNyY2gtY2hubA=="}"#
        )
        #expect(request.devices.isEmpty)
        #expect(request.channel?.id == "dHN0LXNyY2gtY2hubA==")
        #expect(request.targets == ["channel:dHN0LXNyY2gtY2hubA=="])
        try request.check(for: .token)
        // A collapse id is refused for a channel: channels have none.
        let collapsed = try read(
            #"{"push-type":"liveactivity","bundle-id":"a.b","event":"end","content-state":{},"collapse-id":"x","channel":"dHN0"}"#
        )
        let refused = #expect(throws: RequestProblem.self) { try collapsed.check(for: .token) }
        #expect(refused?.kind == .invalid)
    }

    /// An accessory's response: the gateway's fields become Apple's keys, every value a string;
    /// what the accessory cannot have sent is a 400 naming the gateway's field.
    @Test func anAccessoryResponseIsSentAsTheAccessorySentIt() throws {
        func body(_ fields: String) -> String {
            #"{"push-type":"accessory","bundle-id":"a.b",\#(fields),"devices":["\#(Self.token)"]}"#
        }
        let request = try read(
            body(#""encrypted-data":"ZW5j","session-identifier":"s-1","key-id":"a2V5","message-index":42"#))
        try request.check(for: .certificate)
        #expect(
            try request.notification.request(to: request.devices[0]).bodyText
                == #"{"aps":{"encryptedData":"ZW5j","sessionIdentifier":"s-1","keyID":"a2V5","messageIndex":"42"}}"#)
        let notBase64 = try read(
            body(#""encrypted-data":"ZW5j","session-identifier":"s-1","key-id":"a2V5!","message-index":42"#))
        let refused = #expect(throws: RequestProblem.self) { try notBase64.check(for: .token) }
        #expect(refused?.field == "key-id")
        #expect(refused?.kind == .invalid)
        #expect(
            throws: RequestProblem(field: "message-index", "accessory needs the ratchet's \"message-index\"")
        ) { try read(body(#""encrypted-data":"ZW5j","session-identifier":"s-1","key-id":"a2V5""#)) }
        #expect(throws: RequestProblem(field: "message-index", "is negative; give 0 or more")) {
            try read(body(#""encrypted-data":"ZW5j","session-identifier":"s-1","key-id":"a2V5","message-index":-1"#))
        }
    }

    /// The two rules openapi.yaml cannot state get answers of their own (413, 403), so that a body
    /// the schema allows is never a 400.
    @Test func rulesThatNeedTheWholeRequestAreCheckedToo() throws {
        let big = String(repeating: "x", count: 5000)
        let request = try read(
            "{\"push-type\":\"alert\",\"bundle-id\":\"a.b\",\"alert\":\"\(big)\",\"devices\":[\"\(Self.token)\"]}")
        let tooLarge = #expect(throws: RequestProblem.self) { try request.check(for: .token) }
        #expect(tooLarge?.kind == .tooLarge)
        #expect(tooLarge.map { Problem($0).status } == .contentTooLarge)
        let mdm = try read(
            "{\"push-type\":\"mdm\",\"topic\":\"com.apple.mgmt.X\",\"push-magic\":\"m\",\"devices\":[\"\(Self.token)\"]}"
        )
        let wrongCredential = #expect(throws: RequestProblem.self) { try mdm.check(for: .token) }
        #expect(wrongCredential?.kind == .notForThisGateway)
        #expect(wrongCredential.map { Problem($0).status } == .forbidden)
        #expect(
            wrongCredential?.message
                == "mdm pushes cannot be sent through a token connector; APNs accepts them only with certificate authentication. Send them through a connector made with that credential."
        )
        try mdm.check(for: .certificate)
    }

    /// A token given twice, in either case, is one device, sent once; the apns-id rule counts the
    /// tokens given, as openapi.yaml does.
    @Test func aTokenGivenTwiceIsSentOnce() throws {
        let upper = Self.token.uppercased()
        let request = try read(
            "{\"push-type\":\"background\",\"bundle-id\":\"a.b\",\"devices\":[\"\(Self.token)\",\"\(Self.other)\",\"\(upper)\",\"\(Self.token)\"]}"
        )
        #expect(request.targets == [Self.token, Self.other])
        #expect(
            problem(
                "{\"push-type\":\"background\",\"bundle-id\":\"a.b\",\"apns-id\":\"123e4567-e89b-12d3-a456-4266554400a0\",\"devices\":[\"\(Self.token)\",\"\(upper)\"]}"
            )?.field == "apns-id")
    }

    /// A collapse id is 1 to 64 visible ASCII characters here: what openapi.yaml can state exactly
    /// (a schema counts characters, the library's limit is 64 bytes of UTF-8).
    @Test func aCollapseIDIsVisibleASCII() throws {
        func body(_ id: String) -> String {
            #"{"push-type":"background","bundle-id":"a.b","collapse-id":"\#(id)","devices":["\#(Self.token)"]}"#
        }
        let longest = String(repeating: "~", count: 64)
        #expect(try read(body(longest)).storedJSON.contains(longest))
        #expect(try read(body("score 42")).notification.collapseID == "score 42")
        let refusal = RequestProblem(
            field: "collapse-id",
            "give 1 to 64 visible ASCII characters (letters, digits, punctuation, space); it travels in an HTTP header")
        for refused in [longest + "~", "", "caf\u{e9}", "a\\tb", "\u{7f}"] {
            #expect(problem(body(refused)) == refusal, "\(refused)")
        }
    }
}
