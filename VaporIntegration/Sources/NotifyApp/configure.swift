import APNs
import APNsVapor
import Vapor

// A push service in a few lines: the connector comes from APNS_* environment variables
// (`app.apns.useFromEnvironment()`), `POST /notify` sends an alert and
// `POST /deliveries/:token` updates a delivery's Live Activity. An APNsError thrown by a send
// becomes its HTTP status (400 for a bad token, 410 for an unregistered one, 503/504 when APNs
// does not answer).

/// The body of `POST /notify`.
struct Notify: Content {
    var token: String
    var title: String
    var body: String
}

/// The body of `POST /deliveries/:token`: a Live Activity's new state.
struct Progress: Content {
    var stopsAway: Int
}

/// The Live Activity's content state, as the app's `ActivityAttributes.ContentState` decodes it.
struct Delivery: Codable, Sendable {
    var stopsAway: Int
}

/// What the routes answer: APNs' status and the push's apns-id.
struct Sent: Content {
    var status: Int
    var apnsID: String?
}

/// Registers the connector from the environment and the routes. `APNS_TOPIC` is the app's bundle id.
public func configure(_ app: Application) throws {
    try app.apns.useFromEnvironment()
    routes(app, topic: Environment.get("APNS_TOPIC") ?? "com.example.app")
}

/// The routes, sending through `app.apns`' default connector; `topic` is the app's bundle id.
public func routes(_ app: Application, topic: String) {
    app.post("notify") { req async throws -> Sent in
        let notify = try req.content.decode(Notify.self)
        let device = try Device(token: notify.token)
        let response = try await req.apns.send(
            AlertNotification(bundleID: topic) {
                Alert {
                    Title(notify.title)
                    Body(notify.body)
                }
                Sound.default
            },
            to: device)
        return Sent(status: response.status, apnsID: response.apnsID?.description)
    }

    app.post("deliveries", ":token") { req async throws -> Sent in
        let progress = try req.content.decode(Progress.self)
        let device = try Device(token: req.parameters.require("token"))
        let response = try await req.apns.send(
            LiveActivityNotification(
                bundleID: topic, update: Delivery(stopsAway: progress.stopsAway), timestamp: .now),
            to: device)
        return Sent(status: response.status, apnsID: response.apnsID?.description)
    }
}
