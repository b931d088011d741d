import APNsGateway
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Requests with API keys the gateway does not know cost a database read each, so their look-ups
/// have a rate per caller's address: past it they are a 429 that reaches no database, while keys
/// already known (and remembered), and other callers' keys, go on as before.
@Suite struct APIKeyLookupTests {
    @Test func guessedKeysAreLimitedAndKnownKeysAreNot() async throws {
        let setup = try await GatewayAPITests.Setup.start(.sqlite)
        var limits = GatewayAPI.Configuration()
        limits.unknownKeysPerSecond = 1  // a burst of 2
        // The API's time stands still, so no look-up is refilled however slow a request is (beside
        // six busy processes one took seconds, and the fourth guess was answered 401, not 429).
        limits.clock = ManualGatewayClock()
        let api = GatewayAPI(store: setup.store, configuration: limits, authenticationMethod: .token)
        let key = setup.key
        let answers = try await Application(router: api.router()).test(.router) { client in
            var answers: [(HTTPResponse.Status, String?)] = []
            func get(_ apiKey: String) async throws {
                answers.append(
                    try await client.execute(
                        uri: "/v1/unregistered", method: .get, headers: GatewayAPITests.bearer(apiKey)
                    ) { ($0.status, $0.headers[.retryAfter]) })
            }
            // A known key's look-up gives its token back.
            for _ in 0..<3 { try await get(key) }
            for _ in 0..<3 { try await get(GatewayAPI.makeAPIKey()) }
            try await get(key)  // remembered: not a look-up
            return answers
        }
        #expect(answers.map(\.0) == [.ok, .ok, .ok, .unauthorized, .unauthorized, .tooManyRequests, .ok])
        #expect(answers[5].1 == "1")
        try await setup.stop()
    }

    /// A flood of guesses from one address (the test client's, 127.0.0.1) leaves a valid key,
    /// never looked up before, served to another (127.0.0.2, curl bound to it): each address has
    /// its own look-ups. The flooding address stays refused.
    @Test func oneCallersGuessesDoNotTurnAwayAnotherCallersKey() async throws {
        let setup = try await GatewayAPITests.Setup.start(.sqlite)
        var limits = GatewayAPI.Configuration()
        limits.unknownKeysPerSecond = 1  // a burst of 2
        limits.clock = ManualGatewayClock()
        let api = GatewayAPI(store: setup.store, configuration: limits, authenticationMethod: .token)
        let key = setup.key
        let application = Application(
            router: api.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await application.test(.live) { client in
            var flood: [HTTPResponse.Status] = []
            for _ in 0..<4 {
                flood.append(
                    try await client.execute(
                        uri: "/v1/unregistered", method: .get, headers: GatewayAPITests.bearer(GatewayAPI.makeAPIKey())
                    ) { $0.status })
            }
            #expect(flood == [.unauthorized, .unauthorized, .tooManyRequests, .tooManyRequests])
            let port = try #require(client.port)
            let process = TestProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = [
                "--silent", "--output", "/dev/null", "--write-out", "%{http_code}", "--interface", "127.0.0.2",
                "--header", "Authorization: Bearer \(key)", "http://127.0.0.1:\(port)/v1/unregistered",
            ]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(status == "200", "another address's valid key: \(status)")
            let again = try await client.execute(
                uri: "/v1/unregistered", method: .get, headers: GatewayAPITests.bearer(GatewayAPI.makeAPIKey())
            ) { $0.status }
            #expect(again == .tooManyRequests)
        }
        try await setup.stop()
    }
}
