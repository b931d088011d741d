// A bulk send's onOutcome written in main-actor code (a command line tool's main.swift, a
// @MainActor service) may use that actor's state: the eager send runs on its caller's actor, so the
// closure is never sent elsewhere. Before, this was "sending value of non-Sendable type risks
// causing data races".
import APNs
@MainActor enum Forgotten { static var devices: [Device] = [] }
@MainActor func go(_ connector: TokenConnector, _ devices: [Device]) async throws {
    var accepted = 0
    let alert = AlertNotification(bundleID: "com.example.app") { Alert("Hi") }
    try await send(alert, via: connector, to: devices) { outcome in
        if outcome.isAccepted { accepted += 1 }
        if outcome.rejection?.reason == .unregistered { Forgotten.devices.append(outcome.device) }
    }
    for try await outcome in try bulkSendOutcomes(alert, via: connector, to: devices) where outcome.isAccepted {
        accepted += 1
    }
    print(accepted)
}
actor Sender {
    var accepted = 0
    func go(_ connector: TokenConnector, _ devices: [Device]) async throws {
        try await send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, via: connector, to: devices) {
            outcome in if outcome.isAccepted { accepted += 1 }
        }
    }
}
