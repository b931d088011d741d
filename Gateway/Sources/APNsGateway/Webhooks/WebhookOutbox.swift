@_spi(Description) import APNs
import Foundation

/// An app's webhook endpoint: where the gateway posts the final outcome of each of its
/// device-sends and the tokens APNs reported unregistered, signed with the endpoint's secret
/// (``WebhookSecret``, sealed in the queue like a credential's).
///
/// Thread safety: a value; `Sendable`. Its `description` shows no secret.
package struct WebhookEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The operator's name for it, unique.
    package var name: String
    /// The app (bundle id, or MDM topic) whose outcomes it receives.
    package var app: String
    /// Where the messages are posted (`https://…`, or `http://` on loopback).
    package var url: String
    /// The secret, sealed (``CredentialVault``), base64.
    package var sealed: String
    package var createdAt: Date

    package init(name: String, app: String, url: String, sealed: String, createdAt: Date) {
        self.name = name
        self.app = app
        self.url = url
        self.sealed = sealed
        self.createdAt = createdAt
    }

    /// The name under which its secret is sealed: apart from the credentials' names.
    package static func sealingName(_ name: String) -> String { "webhook:" + name }

    package var description: String { "\(name) \(app) \(url)" }
}

/// An endpoint and how its messages stand, for `apns-gateway webhook list`.
package struct WebhookEndpointStatus: Sendable, Hashable {
    package var endpoint: WebhookEndpoint
    /// Events not yet in a message.
    package var waiting: Int
    /// Messages made and neither delivered nor given up on.
    package var pending: Int
    package var delivered: Int
    package var givenUp: Int
    /// The last failure of its last message given up on, or of a pending one.
    package var lastError: String?
}

/// The outbox's backlog over every endpoint (``GatewayStore/webhookBacklog()``).
package struct WebhookBacklog: Sendable, Hashable {
    /// Events not yet gathered into a message.
    package var waitingEvents: Int
    /// Messages neither delivered nor given up on.
    package var pendingMessages: Int
}

/// A message to one endpoint, made from its waiting events (one or more), with the id it keeps
/// on every try.
package struct WebhookMessage: Sendable, Hashable {
    /// `msg_` and a UUID: the `webhook-id` of every try.
    package var id: String
    package var endpoint: WebhookEndpoint
    package var body: String
    package var createdAt: Date
    /// Tries before this one.
    package var attempts: Int
}

/// How a try of a message ended, as written back.
package enum WebhookTry: Sendable, Hashable {
    /// The endpoint answered 2xx: done.
    case delivered
    /// Another try at `at`; `error` says why this one failed.
    case again(at: Date, error: String)
    /// No more tries: the message is kept, with why.
    case givenUp(error: String)
}

/// The events a final outcome makes for its app's endpoints: an `outcome` for every device-send,
/// and an `unregistered` for a 410. The payloads are JSON objects, one per event, gathered into a
/// message's `data` array.
package enum WebhookEvents {
    /// The events of `outcome` (finished at `now`): (type, JSON payload).
    package static func of(_ outcome: DeliveryOutcome, now: Date) -> [(type: String, payload: String)] {
        var members: [String: JSONValue] = [
            "notification": .string(outcome.notificationID), "token": .string(outcome.token),
            "app": .string(outcome.app), "state": .string(OutcomeResult(outcome).rawValue),
            "finished-at": .integer(Int64((now.timeIntervalSince1970 * 1000).rounded())),
        ]
        if let status = outcome.status { members["status"] = .integer(Int64(status)) }
        if let reason = outcome.reason { members["reason"] = .string(reason) }
        if let apnsID = outcome.apnsID { members["apns-id"] = .string(apnsID) }
        if let delivery = outcome.delivery { members["delivery"] = .string(delivery) }
        if let kind = outcome.errorKind { members["error-kind"] = .string(kind) }
        if let message = outcome.message { members["message"] = .string(message) }
        var events = [(type: "outcome", payload: JSONValue.object(members).compactText)]
        if outcome.status == 410 {
            var unregistered: [String: JSONValue] = ["token": .string(outcome.token), "app": .string(outcome.app)]
            if let since = outcome.invalidSince {
                unregistered["invalid-since"] = .integer(Int64((since.timeIntervalSince1970 * 1000).rounded()))
            }
            events.append((type: "unregistered", payload: JSONValue.object(unregistered).compactText))
        }
        return events
    }

    /// A message's body: `{"type":"apns-gateway.events","timestamp":…,"data":[{"type":…,…},…]}`,
    /// each event's payload with its type.
    package static func body(_ events: [(type: String, payload: String)], at now: Date) -> String {
        let data = events.map { event in
            // The payload is an object written by ``of(_:now:)``: its type goes first.
            "{\"type\":\"\(event.type)\"," + event.payload.dropFirst()
        }
        return
            "{\"type\":\"apns-gateway.events\",\"timestamp\":\(Int64((now.timeIntervalSince1970 * 1000).rounded())),\"data\":["
            + data.joined(separator: ",") + "]}"
    }
}
