import Foundation
import APNs
import APNsTesting
struct State: Encodable, Sendable { var step = 1 }
struct Attrs: Encodable, Sendable { var name = "x" }
let device = try! Device(token: "abcd")
let devices = [device]
let now = Date()
struct Game: Codable, Sendable { var score = 1 }

func configured(_ useToken: Bool, token: TokenConnector, certificate: CertificateConnector) async throws {
    let connector = useToken ? AnyConnector(token) : AnyConnector(certificate)
    try await send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, via: connector, to: device)
    try await send(MDMNotification(topic: "com.apple.mgmt.x", pushMagic: "m"), via: connector, to: device)  // checked at run time
    let summary: BulkSendSummary = try await send(BackgroundNotification(bundleID: "com.example.app"), via: connector, to: devices)
    print(summary.accepted, summary.rejected, summary.failed, summary.deliveryUnknown, summary.cancelled)
    for try await outcome in try bulkSendOutcomes(WidgetNotification(bundleID: "com.example.app"), via: connector, to: devices) {
        print(outcome.isAccepted)
    }
    let channel = try BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app")
    try await send(LiveActivityNotification(bundleID: "com.example.app", update: State(), timestamp: now), via: connector, to: channel)
    let manager = ChannelManager(connector)
    _ = manager
    let method: AuthenticationMethod = connector.authenticationMethod
    _ = method
    let wrappedTwice = AnyConnector(connector)
    _ = wrappedTwice.base
}

func renamed(_ response: APNsHTTPResponse) throws -> APNsResponse { try APNsResponse(interpreting: response) }

func eagerBulk(_ connector: TokenConnector) async throws {
    var unregistered: [Device] = []
    let summary = try await send(AlertNotification(bundleID: "com.example.app") { Alert("Sale") }, via: connector, to: devices) { outcome in
        if outcome.rejection?.reason == .unregistered { unregistered.append(outcome.device) }
    }
    print(summary, unregistered.count)
}

func customConnectorChecks() {
    struct Mine: Connector {
        typealias Authentication = TokenAuthentication
        func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
            try request.checkRules(for: authenticationMethod)
            return APNsHTTPResponse(status: 200, headers: [])
        }
    }
    _ = Mine()
}

func qualified() -> APNs.Category { APNs.Category("GAME_INVITE") }
