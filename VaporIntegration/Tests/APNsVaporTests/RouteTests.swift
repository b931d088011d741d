import APNs
import APNsMockServer
import APNsVapor
import Foundation
import NotifyApp
import Testing
import Vapor
import VaporTesting

/// The Live Activity's content state, as the example app encodes it.
struct Delivery: Codable, Sendable {
    var stopsAway: Int
}

/// The example app's routes, through `req.apns`, against a real HTTP/2 mock APNs.
@Suite struct RouteTests {
    /// The headers the connector adds to the library's request: the provider token, the length.
    static let addedOnTheWire: Set<String> = ["authorization", "content-length"]

    @Test func anAlertAndALiveActivityUpdateReachAPNsExactlyAsTheLibraryBuildsThem() async throws {
        let apns = try await MockAPNs.start()
        try await withApp { app in
            try app.apns.use(apns.tokenConnector(logger: app.logger))
            routes(app, topic: MockAPNs.topic)
            try await app.testing().test(
                .POST, "notify",
                beforeRequest: { req in
                    try req.content.encode(["token": MockAPNs.token, "title": "Shipped", "body": "Tuesday"])
                },
                afterResponse: { res async throws in
                    #expect(res.status == .ok)
                    #expect(res.body.string.contains(#""status":200"#))
                })
            try await app.testing().test(
                .POST, "deliveries/\(MockAPNs.token)",
                beforeRequest: { req in
                    try req.content.encode(["stopsAway": 2])
                },
                afterResponse: { res async throws in
                    #expect(res.status == .ok)
                })
        }
        let requests = apns.server.requests
        try #require(requests.count == 2)
        let device = try Device(token: MockAPNs.token)
        let alert = try AlertNotification(bundleID: MockAPNs.topic) {
            Alert {
                Title("Shipped")
                Body("Tuesday")
            }
            Sound.default
        }.request(to: device)
        #expect(requests[0].path == alert.path)
        #expect(String(decoding: requests[0].body, as: UTF8.self) == String(decoding: alert.body, as: UTF8.self))
        #expect(requests[0].headers.filter { !Self.addedOnTheWire.contains($0.name) } == alert.headers)
        #expect(requests[0].headers.first { $0.name == "content-length" }?.value == "\(alert.body.count)")
        #expect(requests[1].path == "/3/device/\(MockAPNs.token)")
        // The update's timestamp is the route's `.now`: read it back, then build the library's own request.
        let sent = try #require(
            try JSONSerialization.jsonObject(with: Data(requests[1].body)) as? [String: [String: Any]])
        let timestamp = try #require(sent["aps"]?["timestamp"] as? Int)
        let update = try LiveActivityNotification(
            bundleID: MockAPNs.topic, update: Delivery(stopsAway: 2),
            timestamp: Date(timeIntervalSince1970: TimeInterval(timestamp))
        ).request(to: device)
        #expect(requests[1].body == update.body, "\(String(decoding: requests[1].body, as: UTF8.self))")
        #expect(requests[1].headers.filter { !Self.addedOnTheWire.contains($0.name) } == update.headers)
        try await apns.stop()
    }

    @Test(arguments: [
        // APNs' rejection, the status the route answers, the reason it gives.
        (400, "BadDeviceToken", HTTPResponseStatus.badRequest, "APNs refused the push: 400 BadDeviceToken"),
        (410, "Unregistered", .gone, "APNs refused the push: 410 Unregistered"),
        (403, "InvalidProviderToken", .badGateway, "APNs refused the push: 403 InvalidProviderToken"),
        (429, "TooManyRequests", .serviceUnavailable, "APNs refused the push: 429 TooManyRequests"),
    ])
    func aRejectionBecomesAStatus(
        _ apnsStatus: Int, _ apnsReason: String, _ expected: HTTPResponseStatus, _ message: String
    ) async throws {
        let apns = try await MockAPNs.start()
        let body =
            apnsStatus == 410
            ? #"{"reason":"Unregistered","timestamp":1700000000000}"# : #"{"reason":"\#(apnsReason)"}"#
        apns.server.inject(.respond(status: apnsStatus, retryAfter: apnsStatus == 429 ? 30 : nil, body: body))
        try await withApp { app in
            try app.apns.use(apns.tokenConnector())
            routes(app, topic: MockAPNs.topic)
            try await app.testing().test(
                .POST, "notify",
                beforeRequest: { req in
                    try req.content.encode(["token": MockAPNs.token, "title": "Hi", "body": "There"])
                },
                afterResponse: { res async throws in
                    #expect(res.status == expected)
                    #expect(res.body.string.contains(message), "\(res.body.string)")
                    #expect(res.headers.first(name: "Retry-After") == (apnsStatus == 429 ? "30" : nil))
                })
        }
        try await apns.stop()
    }

    @Test func aBadTokenIsA400BeforeAnythingIsSent() async throws {
        let apns = try await MockAPNs.start()
        try await withApp { app in
            try app.apns.use(apns.tokenConnector())
            routes(app, topic: MockAPNs.topic)
            try await app.testing().test(
                .POST, "notify",
                beforeRequest: { req in
                    try req.content.encode(["token": "xyz", "title": "Hi", "body": "There"])
                },
                afterResponse: { res async throws in
                    #expect(res.status == .badRequest)
                    #expect(res.body.string.contains("hex"), "\(res.body.string)")
                })
        }
        #expect(apns.server.requests.isEmpty)
        try await apns.stop()
    }

    @Test func noAnswerIsA504ThatSaysWhetherThePushMayHaveBeenDelivered() async throws {
        let apns = try await MockAPNs.start()
        apns.server.inject(.neverAnswer)
        try await withApp { app in
            try app.apns.use(apns.tokenConnector())
            app.post("notify") { req async throws -> HTTPStatus in
                try await req.apns.send(
                    AlertNotification(bundleID: MockAPNs.topic) { Alert("Hi") }, to: try Device(token: MockAPNs.token),
                    timeout: .milliseconds(500))
                return .accepted
            }
            try await app.testing().test(.POST, "notify") { res async throws in
                #expect(res.status == .gatewayTimeout)
                #expect(
                    res.body.string.contains("no answer from APNs (timeout): it may have been delivered"),
                    "\(res.body.string)")
            }
        }
        try await apns.stop()
    }
}
