@_spi(RawRequests) import APNs
import APNsMockServer
import Foundation
import TestFixtures
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The mock's console API, for tests in any language: what arrived (filtered, awaited, cleared),
/// devices whose app is removed, faults switched on and off.
@Suite struct ConsoleTests {
    static func raw(_ token: String, pushType: String = "alert", priority: String? = nil) -> APNsRequest {
        var headers = [("apns-push-type", pushType), ("apns-topic", Fixture.bundleID)]
        if let priority { headers.append(("apns-priority", priority)) }
        return APNsRequest(
            method: .post, service: .device, path: "/3/device/\(token)",
            headers: headers.map { .init(name: $0.0, value: $0.1) },
            body: Array(#"{"aps":{"alert":{"title":"Goal","body":"2-1"},"badge":3}}"#.utf8))
    }

    static func object(_ response: ConsoleAPI.Response) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any])
    }

    /// A push as the console shows it: device, push type, priority, topic, verdict, the token's
    /// claims — and never the token itself.
    @Test func aRequestIsListedWithWhatItSaidAndNoCredential() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            let connector = try fixture.tokenConnector()
            let token = String(repeating: "ab", count: 32)
            #expect(try await connector.performWithoutRuleCheck(Self.raw(token, priority: "5")).status == 200)
            #expect(
                try await connector.performWithoutRuleCheck(Self.raw(token, pushType: "background")).status == 400)
            let listed = await api.answer(.init(method: "GET", target: "/api/requests?verdict=accepted"))
            #expect(listed.status == 200)
            let requests = try #require(try Self.object(listed)["requests"] as? [[String: Any]])
            #expect(requests.count == 1)
            let first = try #require(requests.first)
            #expect(first["device"] as? String == token && first["push-type"] as? String == "alert")
            #expect(first["priority"] as? Int == 5 && first["topic"] as? String == Fixture.bundleID)
            #expect(first["verdict"] as? String == "accepted" && first["number"] as? Int == 1)
            let payload = try #require(first["payload"] as? [String: Any])
            #expect((payload["aps"] as? [String: Any])?["badge"] as? Int == 3)
            let authentication = try #require(first["authentication"] as? [String: Any])
            #expect(authentication["kind"] as? String == "token" && authentication["key-id"] as? String == "KEY0000001")
            #expect(!listed.body.contains("eyJ"), "no JWT (its header, claims or signature) in the answer")
            // Filters: a reason, a push type, a number.
            let refused = try Self.object(
                await api.answer(.init(method: "GET", target: "/api/requests?verdict=rejected")))
            #expect((refused["requests"] as? [[String: Any]])?.map { $0["push-type"] as? String } == ["background"])
            let later = try Self.object(await api.answer(.init(method: "GET", target: "/api/requests?since=1")))
            #expect((later["requests"] as? [[String: Any]])?.count == 1 && later["next-since"] as? Int == 2)
            // Cleared: numbers go on from where they were.
            #expect(await api.answer(.init(method: "DELETE", target: "/api/requests")).status == 204)
            #expect(try await connector.performWithoutRuleCheck(Self.raw(token)).status == 200)
            let after = try Self.object(await api.answer(.init(method: "GET", target: "/api/requests")))
            #expect((after["requests"] as? [[String: Any]])?.map { $0["number"] as? Int } == [3])
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// A device made by the console; its app removed: every later push to it is 410 Unregistered
    /// with that time, as APNs answers a token whose app was uninstalled.
    @Test func removingTheAppMakesTheTokenUnregistered() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            let made = await api.answer(
                .init(method: "POST", target: "/api/devices", body: Array(#"{"app":"com.example.app"}"#.utf8)))
            #expect(made.status == 201)
            let token = try #require(try Self.object(made)["token"] as? String)
            #expect(token.count == 64)
            let connector = try fixture.tokenConnector()
            #expect(try await connector.performWithoutRuleCheck(Self.raw(token)).status == 200)
            let removed = try Self.object(await api.answer(.init(method: "DELETE", target: "/api/devices/\(token)")))
            let at = try #require(removed["app-removed-at"] as? Int64)
            let answer = try await connector.performWithoutRuleCheck(Self.raw(token))
            let rejection = APNsRejection(status: answer.status, body: answer.body)
            #expect(answer.status == 410 && rejection.reason == .unregistered)
            #expect(rejection.timestamp.map(APNsRejection.millisecondsSince1970) == at)
            let listed = try Self.object(await api.answer(.init(method: "GET", target: "/api/devices")))
            #expect((listed["devices"] as? [[String: Any]])?.first?["app-removed-at"] as? Int64 == at)
            // The same on the server, for a Swift test.
            #expect(fixture.server.devices.map(\.token) == [token])
            #expect(fixture.server.devices.first?.appRemovedAt.map(APNsRejection.millisecondsSince1970) == at)
            let other = fixture.server.makeDevice(bundleID: Fixture.bundleID)
            #expect(try await connector.performWithoutRuleCheck(Self.raw(other.token)).status == 200)
            fixture.server.removeApp(from: other.token)
            #expect(try await connector.performWithoutRuleCheck(Self.raw(other.token)).status == 410)
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// A fault switched on answers as `--fault` does, and the request it dealt with is listed with
    /// what it did; switched off, the mock answers again. A fault that is none is a 400 that lists
    /// them.
    @Test func aFaultIsSwitchedOnAndOff() async throws {
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            let connector = try fixture.tokenConnector()
            let token = String(repeating: "cd", count: 32)
            let on = await api.answer(
                .init(method: "PUT", target: "/api/fault", body: Array(#"{"fault":"status:503:30"}"#.utf8)))
            #expect(on.status == 200)
            let failed = try await connector.performWithoutRuleCheck(Self.raw(token))
            #expect(failed.status == 503)
            #expect(await api.answer(.init(method: "DELETE", target: "/api/fault")).status == 204)
            #expect(try await connector.performWithoutRuleCheck(Self.raw(token)).status == 200)
            // A stream the fault resets, never answered.
            let reset = await api.answer(
                .init(
                    method: "PUT", target: "/api/fault", body: Array(#"{"fault":"rst-stream:2","requests":1}"#.utf8)))
            #expect(reset.status == 200)
            // A connection takes the fault it opened with: a new one for the new fault.
            let second = try fixture.tokenConnector()
            _ = try? await second.performWithoutRuleCheck(Self.raw(token))
            await second.shutdown(gracePeriod: .zero)
            // Both faulted requests are listed, with what the fault did; the server's own list
            // (what it judged) holds only the accepted one.
            let faulted = try Self.object(
                await api.answer(.init(method: "GET", target: "/api/requests?verdict=faulted")))
            let listed = try #require(faulted["requests"] as? [[String: Any]])
            #expect(listed.map { $0["verdict"] as? String } == ["ServiceUnavailable", "fault: RST_STREAM 2"])
            #expect(listed.map { $0["status"] as? Int } == [503, 0])
            #expect(listed.first?["fault"] as? String == "503 retry-after 30")
            #expect(fixture.server.requests.map(\.status) == [200])
            #expect(fixture.server.receivedRequests.map(\.status) == [503, 200, 0])
            let bad = await api.answer(.init(method: "PUT", target: "/api/fault", body: Array(#"{"fault":"x"}"#.utf8)))
            #expect(bad.status == 400 && bad.body.contains("reset-after:N"))
            await connector.shutdown(gracePeriod: .zero)
        }
    }

    /// Over HTTP, as a test in another language uses it: an await that returns once the pushes it
    /// waits for have arrived, and a 408 when they do not.
    @Test func theConsoleIsServedOverHTTP() async throws {
        try await Fixture.with { fixture in
            let console = try await MockConsole.start(serving: fixture.server)
            let base = "http://\(console.host):\(console.port)"
            let connector = try fixture.tokenConnector()
            let token = String(repeating: "ef", count: 32)
            async let awaited = URLSession.shared.data(
                from: try #require(URL(string: "\(base)/api/requests/await?count=2&timeout-ms=30000&device=\(token)")))
            for _ in 0..<2 { _ = try await connector.performWithoutRuleCheck(Self.raw(token)) }
            let (data, response) = try await awaited
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect((object["requests"] as? [[String: Any]])?.count == 2)
            let (_, timedOut) = try await URLSession.shared.data(
                from: try #require(URL(string: "\(base)/api/requests/await?count=3&timeout-ms=200")))
            #expect((timedOut as? HTTPURLResponse)?.statusCode == 408)
            let (_, unknown) = try await URLSession.shared.data(from: try #require(URL(string: "\(base)/nothing")))
            #expect((unknown as? HTTPURLResponse)?.statusCode == 404)
            await connector.shutdown(gracePeriod: .zero)
            try await console.stop()
        }
    }

    /// Every route `Docs/MockConsole.openapi.yaml` describes is one the console answers (with a
    /// body it may refuse, never "no such route"), and it describes every route there is.
    @Test func theOpenAPIDocumentListsTheRoutes() async throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/MockConsole.openapi.yaml")
        let text = try String(contentsOf: file, encoding: .utf8)
        var routes: [(method: String, path: String)] = []
        var path: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("  /"), line.hasSuffix(":") { path = String(line.dropFirst(2).dropLast()) }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                ["get:", "post:", "put:", "delete:"].contains(trimmed)
            {
                routes.append((String(trimmed.dropLast()).uppercased(), path))
            }
        }
        #expect(routes.count == 10, "\(routes)")
        try await Fixture.with { fixture in
            let api = ConsoleAPI(server: fixture.server)
            for route in routes {
                let target = route.path.replacingOccurrences(of: "{token}", with: "ab")
                let answer = await api.answer(.init(method: route.method, target: target))
                #expect(!answer.body.contains("no such route"), "\(route)")
            }
            let unknown = await api.answer(.init(method: "PATCH", target: "/api/fault"))
            #expect(unknown.status == 404)
        }
    }
}
