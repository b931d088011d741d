@_spi(Description) import APNs
import APNsMockServer
import Foundation
import TestFixtures
import Testing

/// The console's composer: it offers what the library's rules allow, refuses what they refuse
/// (naming the field), shows the exact request, and writes Swift that compiles and makes those
/// bytes.
@Suite struct ComposerTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    static let channel = "Y2hhbm5lbC0wMDAwMDAwMQ=="

    static func compose(_ api: ConsoleAPI, _ body: String) async throws -> (status: Int, object: [String: Any]) {
        let answer = await api.answer(.init(method: "POST", target: "/api/compose", body: Array(body.utf8)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        return (answer.status, object)
    }

    /// The judged case: an alert with a title and a badge, composed, shown as its exact request and
    /// Swift, sent to the mock through a token connector, and received as shown.
    @Test func anAlertIsComposedShownAndSent() async throws {
        try await Fixture.with { fixture in
            let destination = ConsoleAPI.Destination(
                name: "mock", connectors: [AnyConnector(try fixture.tokenConnector())])
            let api = ConsoleAPI(server: fixture.server, destinations: [destination])
            let (status, object) = try await Self.compose(
                api,
                #"{"notification": {"push-type": "alert", "bundle-id": "com.example.app", "alert": {"title": "Hello"}, "badge": 1}, "device": "\#(Self.token)", "send": "mock"}"#
            )
            #expect(status == 200, "\(object)")
            let request = try #require(object["request"] as? [String: Any])
            #expect(request["path"] as? String == "/3/device/\(Self.token)")
            #expect(request["body"] as? String == #"{"aps":{"alert":{"title":"Hello"},"badge":1}}"#)
            #expect(
                (request["headers"] as? [[String]]) == [
                    ["authorization", "bearer <the connector's provider token>"], ["apns-push-type", "alert"],
                    ["apns-topic", "com.example.app"], ["apns-priority", "10"],
                ])
            #expect(
                object["swift"] as? String == """
                    import APNs

                    let notification = AlertNotification(bundleID: "com.example.app") {
                        Alert {
                            Title("Hello")
                        }
                        Badge(1)
                    }
                    let device = try Device(token: "\(Self.token)")
                    // The exact request (method, path, headers, body) that `send` writes:
                    let request = try notification.request(to: device)
                    // Sent through a connector made once for the app's life:
                    // try await send(notification, via: connector, to: device)

                    """)
            let sent = try #require(object["sent"] as? [String: Any])
            #expect(sent["status"] as? Int == 200)
            let received = try #require(fixture.server.requests.last)
            #expect(received.bodyText == request["body"] as? String)
            #expect(received.apnsID == sent["apns-id"] as? String)
        }
    }

    /// What the composer offers is the rules': each push type's fields, priorities, connector kinds
    /// and targets, and the destinations it was given.
    @Test func whatItOffersIsTheRules() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(
                server: fixture.server,
                destinations: [.init(name: "mock", connectors: [AnyConnector(try fixture.certificateConnector())])])
            let answer = await api.answer(.init(method: "GET", target: "/api/push-types"))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            let types = try #require(object["push-types"] as? [[String: Any]])
            #expect(types.count == PushType.allCases.count)
            for entry in types {
                let name = try #require(PushType.Name(rawValue: entry["name"] as? String ?? ""))
                let fields = (entry["fields"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
                #expect(
                    Set(fields ?? [])
                        == Set(NotificationField.fields(of: name).subtracting([.pushType]).map(\.rawValue)))
                #expect(
                    Set(entry["priorities"] as? [Int] ?? []) == Set(name.pushType.allowedPriorities.map(\.rawValue)))
                #expect(
                    Set(entry["connectors"] as? [String] ?? []) == Set(name.pushType.authentication.map(\.rawValue)))
                #expect((entry["targets"] as? [String])?.contains("channel") == (name == .liveactivity))
            }
            let destinations = try #require(object["destinations"] as? [[String: Any]])
            #expect(destinations.first?["name"] as? String == "mock")
            #expect(destinations.first?["connectors"] as? [String] == ["certificate"])
        }
    }

    /// A value of the right JSON type for each field, so that a refusal is the rule's, not the
    /// type's.
    static func sample(_ field: NotificationField) -> String {
        switch field.jsonKind {
        case .string: #""x""#
        case .integer: "1"
        case .number: "0.5"
        case .boolean: "true"
        case .object: "{}"
        case .alert: #"{"title": "t", "body": "b"}"#
        case .sound: #""s""#
        case .choice(let options): "\"\(options[0])\""
        }
    }

    /// The smallest valid notification of each push type, as JSON fields.
    static func minimal(_ name: PushType.Name) -> String {
        let app = name == .mdm ? #""topic": "com.apple.mgmt.External.x""# : #""bundle-id": "com.example.app""#
        let rest: String
        switch name {
        case .fileprovider: rest = #", "container-identifier": "c", "domain": "d""#
        case .mdm: rest = #", "push-magic": "m""#
        case .accessory:
            rest = #", "encrypted-data": "AA==", "session-identifier": "s", "key-id": "AA==", "message-index": 0"#
        case .liveactivity: rest = #", "event": "update", "content-state": {}"#
        default: rest = ""
        }
        return #""push-type": "\#(name.rawValue)", \#(app)\#(rest)"#
    }

    /// Everything the compile-time rules refuse is refused, naming the field: a field another push
    /// type owns, a priority the type does not take, a connector kind it does not accept, a
    /// broadcast of anything but a Live Activity's update or end. And what they allow is composed.
    @Test func itRefusesWhatTheRulesRefuse() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            var refusals = 0
            for name in PushType.Name.allCases {
                let base = Self.minimal(name)
                let allowed = NotificationField.fields(of: name)
                for field in NotificationField.allCases where !allowed.contains(field) {
                    let (status, object) = try await Self.compose(
                        api,
                        #"{"notification": {\#(base), "\#(field.rawValue)": \#(Self.sample(field))}, "device": "\#(Self.token)"}"#
                    )
                    #expect(
                        status == 422 && object["field"] as? String == field.rawValue, "\(name) \(field): \(object)")
                    refusals += 1
                }
                for priority in [1, 5, 10] {
                    let (status, object) = try await Self.compose(
                        api, #"{"notification": {\#(base), "priority": \#(priority)}, "device": "\#(Self.token)"}"#)
                    let takes = name.pushType.allowedPriorities.contains { $0.rawValue == priority }
                    #expect((status == 200) == takes, "\(name) priority \(priority): \(object)")
                    if !takes {
                        #expect(object["field"] as? String == "priority")
                        refusals += 1
                    }
                }
                for method in AuthenticationMethod.allCases {
                    let (status, object) = try await Self.compose(
                        api,
                        #"{"notification": {\#(base)}, "device": "\#(Self.token)", "connector": "\#(method.rawValue)"}"#
                    )
                    let takes = name.pushType.authentication.contains(method)
                    #expect((status == 200) == takes, "\(name) \(method): \(object)")
                    if !takes {
                        #expect(object["field"] as? String == "connector")
                        refusals += 1
                    }
                }
                let (status, object) = try await Self.compose(
                    api, #"{"notification": {\#(base)}, "channel": "\#(Self.channel)"}"#)
                #expect((status == 200) == (name == .liveactivity), "\(name) to a channel: \(object)")
                if name != .liveactivity {
                    #expect(object["field"] as? String == "channel")
                    refusals += 1
                }
            }
            // A Live Activity's start goes to a device only.
            let start = try await Self.compose(
                api,
                #"{"notification": {"push-type": "liveactivity", "bundle-id": "com.example.app", "event": "start", "content-state": {}, "attributes-type": "A", "attributes": {}, "alert": {"title": "t", "body": "b"}}, "channel": "\#(Self.channel)"}"#
            )
            #expect(start.status == 422 && start.object["field"] as? String == "channel")
            #expect(refusals > 200)
        }
    }

    /// Bad requests say what to give: not JSON, no target, an unknown field.
    @Test func aRequestItCannotReadSaysWhatToGive() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            let notJSON = try await Self.compose(api, "{")
            #expect(notJSON.status == 400 && (notJSON.object["detail"] as? String)?.contains("not valid JSON") == true)
            let noTarget = try await Self.compose(api, #"{"notification": {\#(Self.minimal(.alert))}}"#)
            #expect(noTarget.status == 400 && noTarget.object["field"] as? String == "device")
            let unknown = try await Self.compose(
                api, #"{"notification": {\#(Self.minimal(.alert)), "colour": "red"}, "device": "\#(Self.token)"}"#)
            #expect(unknown.status == 422 && unknown.object["field"] as? String == "colour")
            let nowhere = try await Self.compose(
                api, #"{"notification": {\#(Self.minimal(.alert))}, "device": "\#(Self.token)", "send": "mock"}"#)
            #expect(nowhere.status == 422 && nowhere.object["field"] as? String == "send")
        }
    }

    // MARK: The Swift it shows

    /// The compositions whose Swift `ComposedSwift.swift` holds: every push type, every field.
    static let cases: [(name: String, body: String)] = [
        (
            "alertWithTitleAndBadge",
            #"{"push-type": "alert", "bundle-id": "com.example.app", "alert": {"title": "Hello"}, "badge": 1}"#
        ),
        (
            "alertWithEveryField",
            #"{"push-type": "alert", "bundle-id": "com.example.app", "priority": 5, "expiration": 1900000000, "collapse-id": "score", "apns-id": "123e4567-e89b-12d3-a456-4266554400a0", "alert": {"title": "Goal \"now\"", "subtitle-loc-key": "SUB", "subtitle-loc-args": ["a", "b"], "body": "2-1\nlate", "launch-image": "l.png"}, "badge": 3, "sound": {"critical": 1, "name": "siren.caf", "volume": 0.5}, "thread-id": "match", "category": "GOAL", "interruption-level": "time-sensitive", "relevance-score": 0.75, "content-available": true, "mutable-content": true, "target-content-id": "m1", "filter-criteria": "sports", "data": {"gameID": 7, "teams": ["a", "b"]}}"#
        ),
        (
            "alertLow",
            #"{"push-type": "alert", "bundle-id": "com.example.app", "priority": 1, "alert": "Quiet", "sound": "ping.aiff"}"#
        ),
        (
            "background",
            #"{"push-type": "background", "bundle-id": "com.example.app", "priority": 5, "data": {"sync": true}}"#
        ),
        ("backgroundWithoutData", #"{"push-type": "background", "bundle-id": "com.example.app", "expiration": 0}"#),
        (
            "voip",
            ##"{"push-type": "voip", "bundle-id": "com.example.app", "data": {"caller": "Ann", "tag": "a\"#b"}}"##
        ),
        ("complication", #"{"push-type": "complication", "bundle-id": "com.example.app", "priority": 5}"#),
        ("pushtotalk", #"{"push-type": "pushtotalk", "bundle-id": "com.example.app", "data": {"channel": 2}}"#),
        ("widgets", #"{"push-type": "widgets", "bundle-id": "com.example.app", "priority": 5, "collapse-id": "w"}"#),
        ("controls", #"{"push-type": "controls", "bundle-id": "com.example.app"}"#),
        ("location", #"{"push-type": "location", "bundle-id": "com.example.app", "expiration": 1900000000}"#),
        (
            "fileprovider",
            #"{"push-type": "fileprovider", "bundle-id": "com.example.app", "container-identifier": "NSFileProviderRootContainerItemIdentifier", "domain": "docs"}"#
        ),
        ("mdm", #"{"push-type": "mdm", "topic": "com.apple.mgmt.External.1234", "push-magic": "5F2C9E1A"}"#),
        (
            "accessory",
            #"{"push-type": "accessory", "bundle-id": "com.example.app", "encrypted-data": "AAEC", "session-identifier": "s-1", "key-id": "AQI=", "message-index": 4}"#
        ),
        (
            "liveActivityStart",
            #"{"push-type": "liveactivity", "bundle-id": "com.example.app", "event": "start", "timestamp": 1765000000, "content-state": {"score": "0-0"}, "attributes-type": "MatchAttributes", "attributes": {"home": "A"}, "alert": {"title": "Kick-off", "body": "A v B"}, "sound": "whistle.caf", "input-push-token": true, "stale-date": 1765003600, "relevance-score": 1}"#
        ),
        (
            "liveActivityUpdate",
            #"{"push-type": "liveactivity", "bundle-id": "com.example.app", "event": "update", "timestamp": 1765000060, "content-state": {"score": "1-0"}, "alert": {"title-loc-key": "GOAL", "title-loc-args": ["A"], "body": "1-0"}}"#
        ),
        (
            "liveActivityEnd",
            #"{"push-type": "liveactivity", "bundle-id": "com.example.app", "event": "end", "timestamp": 1765005400, "content-state": {"score": "2-1"}, "dismissal-date": 1765009000, "priority": 5}"#
        ),
    ]

    /// The Swift shown for `case` (to a channel for the Live Activity update, else to a device).
    static func composition(_ api: ConsoleAPI, _ name: String, _ body: String) async throws -> [String: Any] {
        let target = name == "liveActivityUpdate" ? #""channel": "\#(channel)""# : #""device": "\#(token)""#
        let (status, object) = try await compose(api, #"{"notification": \#(body), \#(target)}"#)
        #expect(status == 200, "\(name): \(object)")
        return object
    }

    /// The functions of `ComposedSwift.swift`: the Swift each case shows, without its imports.
    static func composedFile(_ swift: [(name: String, code: String)]) -> String {
        var file = """
            // swift-format-ignore-file: written by a test, compared byte for byte with what the composer writes.
            // The Swift the console's composer shows, one function a composition (ComposerTests.cases),
            // compiled with the tests: ComposerTests.theSwiftItShowsCompilesAndMakesTheBytes checks that
            // this is what the composer writes and that each function makes the request it shows.
            // Written by that test: APNS_REWRITE_COMPOSED_SWIFT=1 swift test --filter ComposerTests
            import APNs
            import Foundation

            enum ComposedSwift {
                static let cases: [String: @Sendable () throws -> APNsRequest] = [

            """
        file += swift.map { "        \"\($0.name)\": \($0.name)," }.joined(separator: "\n") + "\n    ]\n"
        for (name, code) in swift {
            let body = code.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("import ") }.drop { $0.isEmpty }
            file += "\n    static func \(name)() throws -> APNsRequest {\n"
            for line in body where !line.isEmpty { file += "        \(line)\n" }
            file += "        return request\n    }\n"
        }
        return file + "}\n"
    }

    /// The Swift the composer shows compiles (`ComposedSwift.swift` is part of this test target)
    /// and makes the request the composer shows, byte for byte, for every push type.
    @Test func theSwiftItShowsCompilesAndMakesTheBytes() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            var swift: [(name: String, code: String)] = []
            var requests: [String: [String: Any]] = [:]
            for (name, body) in Self.cases {
                let object = try await Self.composition(api, name, body)
                swift.append((name, try #require(object["swift"] as? String)))
                requests[name] = try #require(object["request"] as? [String: Any])
            }
            let expected = Self.composedFile(swift)
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "ComposedSwift.swift")
            if ProcessInfo.processInfo.environment["APNS_REWRITE_COMPOSED_SWIFT"] == "1" {
                try Data(expected.utf8).write(to: file)
            }
            let stored = try String(contentsOf: file, encoding: .utf8)
            #expect(
                stored == expected,
                "ComposedSwift.swift is not what the composer writes: rewrite it with APNS_REWRITE_COMPOSED_SWIFT=1 and read the difference"
            )
            #expect(Set(ComposedSwift.cases.keys) == Set(Self.cases.map(\.name)))
            for (name, make) in ComposedSwift.cases {
                let made = try make()
                let shown = try #require(requests[name])
                #expect(made.path == shown["path"] as? String, "\(name)")
                #expect(made.bodyText == shown["body"] as? String, "\(name)")
                let headers = (shown["headers"] as? [[String]] ?? []).filter { $0.first != "authorization" }
                #expect(made.headers.map { [$0.name, $0.value] } == headers, "\(name)")
            }
        }
    }
}
