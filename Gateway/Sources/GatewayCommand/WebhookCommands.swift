import APNsGateway
import ArgumentParser
import Foundation
import Logging

/// `apns-gateway webhook add|list|remove`: each app's endpoints for the final outcomes of its
/// device-sends and its unregistered tokens, their secrets sealed in the queue like credentials.
struct WebhookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook",
        abstract: "Manage the endpoints that receive each app's outcomes (signed as Standard Webhooks).",
        subcommands: [AddWebhook.self, ListWebhooks.self, RemoveWebhook.self])
}

struct AddWebhook: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract:
            "Add an endpoint for an app's outcomes; prints its secret (whsec_…) once, for the app to verify signatures."
    )
    @OptionGroup var database: DatabaseOptions
    @Option(help: "A name for the endpoint (shown in logs and listings).") var name: String
    @Option(help: "The bundle id (or MDM topic) whose outcomes it receives.") var app: String
    @Option(help: "Where messages are posted: https://…, or http:// on this machine (127.0.0.1, localhost, [::1]).")
    var url: String
    @Option(
        name: .customLong("secret-env"),
        help: "Environment variable holding the endpoint's secret (whsec_…); without it one is made.")
    var secretEnvironment: String?

    func run() async throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), let host = parsed.host else {
            throw ValidationError("--url \(url) is not a URL")
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw ValidationError(
                "--url \(url): give https:// (a message carries device tokens and outcomes), or http:// on this machine"
            )
        }
        let secret: WebhookSecret
        if let secretEnvironment {
            guard let text = ProcessInfo.processInfo.environment[secretEnvironment],
                let given = WebhookSecret(text: text)
            else {
                throw ValidationError(
                    "the environment variable \(secretEnvironment) does not hold a secret: whsec_ and 24 to 64 bytes in base64"
                )
            }
            secret = given
        } else {
            secret = WebhookSecret.make()
        }
        let vault = try database.requiredVault()
        let endpoint = WebhookEndpoint(
            name: name, app: app, url: url,
            sealed: try vault.seal(.webhookSecret(secret.text), for: WebhookEndpoint.sealingName(name), revision: 1),
            createdAt: SystemGatewayClock().now)
        let added = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try StoredCredential.checkKey(vault, opens: try await store.credentials())
            return try await store.addWebhookEndpoint(endpoint)
        }
        guard added else {
            throw ValidationError("an endpoint is called \(name): remove it first, or choose another name")
        }
        print("added \(endpoint)")
        if secretEnvironment == nil { print("secret \(secret.text)") }
    }
}

struct ListWebhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract:
            "Print each endpoint: name, app, URL, events waiting, messages pending, delivered and given up on, and the last error."
    )
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let endpoints = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.webhookEndpoints()
        }
        for status in endpoints {
            print(
                [
                    status.endpoint.name, status.endpoint.app, status.endpoint.url, "waiting \(status.waiting)",
                    "pending \(status.pending)", "delivered \(status.delivered)", "given up \(status.givenUp)",
                    status.lastError.map { "last error: \($0)" } ?? "",
                ].joined(separator: "\t"))
        }
    }
}

struct RemoveWebhook: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove an endpoint, with its waiting events and messages.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The endpoint's name.") var name: String

    func run() async throws {
        let name = self.name
        let removed = try await database.withStore(logger: Logger(label: "apns-gateway")) { store in
            try await store.removeWebhookEndpoint(name: name)
        }
        guard removed else { throw ValidationError("no endpoint is called \(name); `apns-gateway webhook list`") }
        print("removed \(name)")
    }
}
