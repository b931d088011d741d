@_spi(RawRequests) import APNs
import APNsMockServer
import TestFixtures
import Foundation
import Testing

/// The mock server rejects what APNs would, when a raw request breaks a rule.
@Suite struct MockServerTests {
    static let devicePath = Device.test.path
    func raw(
        _ headers: [(String, String)], body: String, path: String = Device.test.path, method: APNsRequest.Method = .post
    ) -> APNsRequest {
        APNsRequest(
            method: method, service: .device, path: path, headers: headers.map { .init(name: $0.0, value: $0.1) },
            body: Array(body.utf8))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var headers: [(String, String)]
        var body: String
        var path: String
        var status: Int
        var reason: String
        init(_ headers: [(String, String)], _ body: String, _ path: String, _ status: Int, _ reason: String) {
            (self.headers, self.body, self.path, self.status, self.reason) = (headers, body, path, status, reason)
        }
        var testDescription: String { reason }
    }

    static let alert = #"{"aps":{"alert":"x"}}"#
    static let base = [("apns-push-type", "alert"), ("apns-topic", "com.example.app")]

    @Test(
        arguments: [
            (base + [("apns-priority", "7")], alert, Self.devicePath, 400, "BadPriority"),
            (
                [("apns-push-type", "background"), ("apns-topic", "com.example.app"), ("apns-priority", "10")],
                #"{"aps":{"content-available":1}}"#, Self.devicePath, 400, "BadPriority"
            ),
            (
                [("apns-push-type", "background"), ("apns-topic", "com.example.app")],
                #"{"aps":{"content-available":1}}"#, Self.devicePath, 400, "BadPriority"
            ),
            (
                [("apns-push-type", "background"), ("apns-topic", "com.example.app"), ("apns-priority", "5")],
                #"{"aps":{"content-available":1,"badge":1}}"#, Self.devicePath, 400, "BadRequestPayload"
            ),
            (base + [("apns-id", "not-a-uuid")], alert, Self.devicePath, 400, "BadMessageId"),
            (
                base + [("apns-collapse-id", String(repeating: "c", count: 65))], alert, Self.devicePath, 400,
                "BadCollapseId"
            ),
            (base + [("apns-expiration", "-1")], alert, Self.devicePath, 400, "BadExpirationDate"),
            ([("apns-push-type", "alert")], alert, Self.devicePath, 400, "MissingTopic"),
            (
                [("apns-push-type", "alert"), ("apns-topic", "com.example.app.push-type.widgets")], alert,
                Self.devicePath, 400, "BadTopic"
            ),
            (
                [("apns-push-type", "widget"), ("apns-topic", "com.example.app")], alert, Self.devicePath, 400,
                "InvalidPushType"
            ),
            (base + [("apns-topic", "com.example.app")], alert, Self.devicePath, 400, "DuplicateHeaders"),
            (base, "", Self.devicePath, 400, "PayloadEmpty"),
            (base, "{not json", Self.devicePath, 400, "BadRequestPayload"),
            (
                base, #"{"aps":{"alert":""# + String(repeating: "a", count: 4100) + #""}}"#, Self.devicePath, 413,
                "PayloadTooLarge"
            ),
            (base, alert, "/3/device/zz", 400, "BadDeviceToken"),
            // Shorter than the 32 bytes APNs issues, or longer than any token: not one APNs issued.
            (base, alert, "/3/device/00", 400, "BadDeviceToken"),
            (base, alert, "/3/device/" + String(repeating: "ab", count: 31), 400, "BadDeviceToken"),
            (base, alert, "/3/device/" + String(repeating: "ab", count: 257), 400, "BadDeviceToken"),
            (base, alert, "/3/device/", 400, "MissingDeviceToken"),
            (base, alert, "/2/device/00aa", 404, "BadPath"),
            (base, alert, "/3/devices/00aa", 404, "BadPath"),
            (base, alert, "/3/device/00aa/more", 404, "BadPath"),
            (base, alert, "/3/device", 400, "MissingDeviceToken"),
        ].map(Case.init))
    func rejectsLikeAPNs(_ example: Case) async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let response = try await connector.performWithoutRuleCheck(
                raw(example.headers, body: example.body, path: example.path))
            #expect(response.status == example.status)
            #expect(APNsRejection(status: response.status, body: response.body).reason?.rawValue == example.reason)
            // A failure carries an apns-id too; none of these requests sent one that is a UUID.
            let id = try #require(response[header: "apns-id"])
            #expect(APNsID(id)?.description == id)
        }
    }

    /// Tests that use short tokens lower the shortest token the mock takes.
    @Test func aShortTokenIsTakenWhenTheTestAllowsIt() async throws {
        try await Fixture.with(adjust: { $0.minimumDeviceTokenBytes = 1 }) { fixture in
            let connector = try fixture.tokenConnector()
            let alert = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
            #expect(try await send(alert, via: connector, to: try Device(token: "00")).status == 200)
        }
    }

    /// On a certificate connection APNs takes a certificate's one topic when the request names
    /// none; a certificate with several topics needs the header (MissingTopic). A token connection
    /// always does (MissingTopic, in the cases above).
    @Test func aCertificateWithOneTopicNamesTheTopic() async throws {
        try await Fixture.with { fixture in
            let single = try fixture.certificateConnector()
            let answered = try await single.performWithoutRuleCheck(
                raw([("apns-push-type", "alert")], body: Self.alert))
            #expect(answered.status == 200)
            #expect(fixture.server.requests.last?.status == 200)

            let several = try fixture.authority.issueClientCertificate(
                bundleID: Fixture.bundleID,
                topics: [.init(Fixture.bundleID, kinds: ["app"]), .init("\(Fixture.bundleID).voip", kinds: ["voip"])])
            let multiple = try CertificateConnector(
                certificate: .pem(several.certificatePEM), privateKey: .pem(several.privateKeyPEM),
                environment: fixture.environment, transport: fixture.transport)
            let refused = try await multiple.performWithoutRuleCheck(
                raw([("apns-push-type", "alert")], body: Self.alert))
            #expect(refused.status == 400)
            #expect(APNsRejection(status: refused.status, body: refused.body).reason == .missingTopic)
            await multiple.shutdown()
        }
    }

    /// Only the sandbox adds apns-unique-id to a success; production sends apns-id alone.
    @Test(arguments: [MockAPNsServer.Environment.sandbox, .production])
    func aSuccessCarriesAUniqueIDOnlyInTheSandbox(environment: MockAPNsServer.Environment) async throws {
        try await Fixture.with(adjust: { $0.environment = environment }) { fixture in
            let connector = try fixture.tokenConnector()
            let response = try await connector.performWithoutRuleCheck(raw(Self.base, body: Self.alert))
            #expect(response.status == 200)
            #expect(response[header: "apns-id"] != nil)
            #expect((response[header: "apns-unique-id"] != nil) == (environment == .sandbox))
        }
    }

    /// A test awaits the requests it needs instead of polling for them: the wait returns true once
    /// enough matching requests have been recorded, those before it included, and false when its
    /// limit passes or its task is cancelled.
    @Test func aTestAwaitsTheRequestsItNeeds() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let other = try Device(token: String(repeating: "ab", count: 32))
            func send(to device: Device) async throws {
                try await APNs.send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert("counted") }, via: connector, to: device)
            }
            let isTest: @Sendable (RecordedRequest) -> Bool = { $0.path == Device.test.path }
            try await send(to: .test)
            let waiting = Task { await fixture.server.requests(count: 3, within: .seconds(60), where: isTest) }
            try await send(to: other)
            try await send(to: .test)
            try await send(to: other)
            try await send(to: .test)
            #expect(await waiting.value)
            #expect(await fixture.server.requests(count: 3, within: .seconds(60), where: isTest), "already there")
            #expect(await fixture.server.requests(count: 5, within: .seconds(60)), "every request, by default")
            #expect(!(await fixture.server.requests(count: 4, within: .milliseconds(100), where: isTest)))
            let cancelled = Task { await fixture.server.requests(count: 100, within: .seconds(60)) }
            cancelled.cancel()
            #expect(!(await cancelled.value))
        }
    }

    /// A test awaits requests that have arrived and wait for their answers (a delay injected),
    /// with nothing recorded yet: what a test of draining sends in flight needs.
    @Test func aTestAwaitsRequestsStillWaitingForTheirAnswers() async throws {
        try await Fixture.with { fixture in
            // Longer than a machine busy with the parallel tier takes between the first arrival and
            // the check that none is answered yet.
            fixture.server.inject(.delay(.seconds(10)))
            let connector = try fixture.tokenConnector()
            let sends = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<3 {
                        group.addTask {
                            try await send(
                                AlertNotification(bundleID: Fixture.bundleID) { Alert("\(index)") }, via: connector,
                                to: .test
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            }
            #expect(await fixture.server.arrivals(count: 3, within: .seconds(60)))
            #expect(fixture.server.requests.isEmpty, "arrived, not answered yet")
            #expect(!(await fixture.server.arrivals(count: 4, within: .milliseconds(100))))
            #expect(try await sends.value == [200, 200, 200])
            #expect(fixture.server.requests.count == 3)
            #expect(await fixture.server.arrivals(count: 3, within: .seconds(60)), "already there")
        }
    }

    /// A client acknowledges the server's first SETTINGS, and the one that raises the stream limit
    /// after the first success (libcurl 8 holds that acknowledgement until it next writes to the
    /// connection); a test awaits them to know which limit the client works to.
    @Test func aTestAwaitsTheClientsAcknowledgementOfEachSettings() async throws {
        try await Fixture.with(adjust: { $0.oneStreamUntilValidToken = true }) { fixture in
            let connector = try fixture.tokenConnector()
            for text in ["first", "second"] {
                let response = try await send(
                    AlertNotification(bundleID: Fixture.bundleID) { Alert(text) }, via: connector, to: .test)
                #expect(response.status == 200)
            }
            #expect(fixture.server.connectionCount == 1)
            #expect(await fixture.server.settingsAcknowledgements(count: 2, within: .seconds(60)), "first and raised")
            #expect(!(await fixture.server.settingsAcknowledgements(count: 3, within: .milliseconds(100))))
            #expect(await fixture.server.settingsAcknowledgements(count: 1, within: .seconds(60)), "already there")
            await connector.shutdown()
        }
    }

    /// APNs answers a failure with the request's apns-id, as it does a success.
    @Test func aFailureCarriesTheRequestsAPNsID() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let id = APNsID()
            let response = try await connector.performWithoutRuleCheck(
                raw(Self.base + [("apns-priority", "7"), ("apns-id", id.description)], body: Self.alert))
            #expect(response.status == 400)
            #expect(response[header: "apns-id"] == id.description)
        }
    }

    @Test func wrongMethodAndMissingToken() async throws {
        try await Fixture.with { fixture in
            let tokenConnector = try fixture.tokenConnector()
            let get = try await tokenConnector.performWithoutRuleCheck(raw(Self.base, body: "", method: .get))
            #expect(get.status == 405)
            // A certificate connection whose certificate is for the topic, but a push type that is token-only.
            let certificateConnector = try fixture.certificateConnector()
            let widgets = try await certificateConnector.performWithoutRuleCheck(
                raw(
                    [("apns-push-type", "widgets"), ("apns-topic", "com.example.app.push-type.widgets")],
                    body: #"{"aps":{"content-changed":true}}"#))
            #expect(APNsRejection(status: widgets.status, body: widgets.body).reason == .badCertificate)
        }
    }

    @Test func scriptedUnregisteredWithTimestamp() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let when = Date(timeIntervalSince1970: 1_700_000_000.5)
            fixture.server.reject(deviceToken: Device.test.token, with: .unregistered, timestamp: when)
            let id = APNsID()
            do throws(APNsError) {
                try await send(
                    AlertNotification(bundleID: Fixture.bundleID, apnsID: id) { Alert("x") }, via: connector, to: .test)
                Issue.record("expected a rejection")
            } catch {
                guard case .rejected(let rejection) = error else { throw error }
                #expect(rejection.status == 410)
                #expect(rejection.reason == .unregistered)
                #expect(rejection.apnsID == id)
                #expect(rejection.timestamp == when)
                #expect(rejection.bodyText == #"{"reason":"Unregistered","timestamp":1700000000500}"#)
                #expect(rejection.retry == .never)
            }
            fixture.server.reject(deviceToken: Device.test.token, with: nil)
            try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
        }
    }

    /// By default the mock accepts what APNs accepts — as a client no one here wrote (aioapns)
    /// found: no `apns-push-type` is an alert, unknown keys inside `aps` are ignored. `strict`
    /// (on in swift-apns' own tests) refuses both, with APNs' own reason names.
    @Test(arguments: [false, true])
    func acceptsWhatAPNsAccepts(strict: Bool) async throws {
        try await Fixture.with(adjust: { $0.strict = strict }) { fixture in
            let connector = try fixture.tokenConnector()
            let noPushType = try await connector.performWithoutRuleCheck(
                raw([("apns-topic", Fixture.bundleID)], body: #"{"aps":{"alert":"x"}}"#))
            let unknownKey = try await connector.performWithoutRuleCheck(
                raw(
                    [("apns-push-type", "alert"), ("apns-topic", Fixture.bundleID)],
                    body: #"{"aps":{"alert":"x","future-key":1}}"#))
            if strict {
                #expect(APNsRejection(noPushType).reason == .missingPushType && noPushType.status == 400)
                #expect(APNsRejection(unknownKey).reason == .badRequestPayload && unknownKey.status == 400)
            } else {
                #expect(noPushType.status == 200)
                #expect(unknownKey.status == 200)
            }
            // APNs does not check a device payload's shape: keys it does not use are ignored, so
            // only `strict` refuses a payload that is not its push type's.
            for (pushType, priority, body) in [
                ("alert", "10", #"{"acme":1}"#), ("alert", "10", #"{"aps":{"alert":"x","badge":-1}}"#),
                ("alert", "10", #"{"aps":{"alert":"x","timestamp":1}}"#),
                ("background", "5", #"{"aps":{"content-available":1,"badge":1}}"#),
            ] {
                let topic = [
                    ("apns-push-type", pushType), ("apns-topic", Fixture.bundleID), ("apns-priority", priority),
                ]
                let answer = try await connector.performWithoutRuleCheck(raw(topic, body: body))
                if strict {
                    #expect(APNsRejection(answer).reason == .badRequestPayload && answer.status == 400, "\(body)")
                } else {
                    #expect(answer.status == 200, "\(body)")
                }
            }
            // A request without apns-push-type passes the client's own rule check too (as an alert).
            #expect(throws: Never.self) {
                try raw([("apns-topic", Fixture.bundleID)], body: "{}").checkRules(for: .token)
            }
        }
    }
}
