import APNs
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle

// A push service: `POST /notify` sends an alert, background or VoIP push through one connector made
// from the environment; `GET /metrics` serves Prometheus metrics (the connector's `apns_*` among
// them); a ServiceGroup runs the HTTP server and the connector and stops both on SIGTERM/SIGINT —
// the server first, then the connector, which lets sends in flight finish.
//
// Environment:
//   APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID     token authentication (.p8), or
//   APNS_P12, APNS_P12_PASSWORD                  certificate authentication
//   APNS_HOST=host:port, APNS_CA_FILE            a mock server and the CA it was issued by
//   APNS_ENVIRONMENT=production                  instead of the sandbox
//   APNS_TOPIC                                   the app's bundle id (com.example.app)
//   HOST, PORT                                   where to listen (127.0.0.1:8080; PORT=0 picks one)
//   LOG_LEVEL                                    trace, debug, info (default), notice, …
//
// Every public APNs name used unqualified next to Foundation, swift-http-types, Hummingbird and
// NIO: none may be ambiguous (`--check-names`). DSL names that an app may also define are
// qualified as `APNs.…`.

/// The body of `POST /notify`.
struct Notify: Decodable {
    enum Kind: String, Decodable { case alert, background, voip }
    var type: Kind = .alert
    var token: String
    var title: String?
    var body: String?
    var category: String?
    /// background: a message for the app; voip: the caller's name.
    var message: String?

    enum CodingKeys: String, CodingKey { case type, token, title, body, category, message }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decodeIfPresent(Kind.self, forKey: .type) ?? .alert
        token = try container.decode(String.self, forKey: .token)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        body = try container.decodeIfPresent(String.self, forKey: .body)
        category = try container.decodeIfPresent(String.self, forKey: .category)
        message = try container.decodeIfPresent(String.self, forKey: .message)
    }

    init(token: String, title: String, body: String, category: String?) {
        (self.token, self.title, self.body, self.category) = (token, title, body, category)
    }
}

/// App data of the background and VoIP pushes.
struct Message: Encodable, Sendable { var message: String }
struct Call: Encodable, Sendable { var caller: String }

/// What `POST /notify` answers: APNs' outcome for the push.
struct Outcome: Encodable {
    var status: Int?
    var apnsID: String?
    var reason: String?
    var error: String?
    /// For a failure without an answer: `not-sent` (safe to send again) or `unknown`.
    var delivery: String?

    enum CodingKeys: String, CodingKey {
        case status, reason, error, delivery
        case apnsID = "apns-id"
    }
}

/// The connector, chosen from the environment, and the same connector as a service to run.
func makeConnector(_ environment: [String: String], logger: Logger) throws -> (AnyConnector, any Service) {
    var transport = TransportConfiguration()
    if let ca = environment["APNS_CA_FILE"] { transport.trustedCertificateAuthority = .file(path: ca) }
    var apnsEnvironment: APNsEnvironment = environment["APNS_ENVIRONMENT"] == "production" ? .production : .sandbox
    if let host = environment["APNS_HOST"], let colon = host.lastIndex(of: ":"),
        let port = Int(host[host.index(after: colon)...])
    {
        apnsEnvironment = .custom(host: String(host[..<colon]), port: port)
    }
    if let keyFile = environment["APNS_KEY_FILE"] {
        let connector = try TokenConnector(
            teamID: environment["APNS_TEAM_ID"] ?? "", keyID: environment["APNS_KEY_ID"] ?? "",
            key: .file(path: keyFile),
            environment: apnsEnvironment, transport: transport, logger: logger)
        return (AnyConnector(connector), connector)
    }
    let connector = try CertificateConnector(
        pkcs12: .file(path: environment["APNS_P12"] ?? "apns.p12"), password: environment["APNS_P12_PASSWORD"] ?? "",
        environment: apnsEnvironment, transport: transport, logger: logger)
    return (AnyConnector(connector), connector)
}

func notification(_ request: Notify, topic: String) -> AlertNotification<NoAppData> {
    AlertNotification(bundleID: topic) {
        Alert {
            Title(request.title ?? "")
            Body(request.body ?? "")
        }
        if let category = request.category { APNs.Category(category) }
        Sound.default
        Badge(1)
    }
}

/// Sends the push `request` asks for.
func deliver(_ request: Notify, topic: String, via connector: AnyConnector) async throws(APNsError) -> APNsResponse {
    let device = try Device(token: request.token)
    switch request.type {
    case .alert:
        return try await send(notification(request, topic: topic), via: connector, to: device)
    case .background:
        return try await send(
            BackgroundNotification(bundleID: topic, appData: Message(message: request.message ?? "")), via: connector,
            to: device)
    case .voip:
        return try await send(
            VoIPNotification(bundleID: topic, appData: Call(caller: request.message ?? "")), via: connector, to: device)
    }
}

/// APNs' outcome as this service's answer: 202 accepted; APNs' own 4xx for a bad token (400, 410);
/// 502 for any other rejection; 503 when nothing came back (504 for a timeout).
func answer(_ result: Result<APNsResponse, APNsError>) -> (HTTPResponse.Status, Outcome) {
    switch result {
    case .success(let response):
        return (.accepted, Outcome(status: response.status, apnsID: response.apnsID?.description))
    case .failure(.rejected(let rejection)):
        let status: HTTPResponse.Status =
            [400, 410].contains(rejection.status) ? .init(code: rejection.status) : .badGateway
        return (
            status,
            Outcome(status: rejection.status, apnsID: rejection.apnsID?.description, reason: rejection.reason?.rawValue)
        )
    case .failure(.validation(let error)):
        return (.badRequest, Outcome(error: error.description))
    case .failure(.transport(let failure)):
        return (
            failure.isTimeout ? .gatewayTimeout : .serviceUnavailable,
            Outcome(error: failure.kind.rawValue, delivery: failure.delivery.rawValue)
        )
    case .failure(let error):
        return (.serviceUnavailable, Outcome(error: error.description))
    }
}

/// swift-http-types' HTTPResponse and APNs' APNsHTTPResponse side by side.
func status(of response: APNsHTTPResponse) -> HTTPResponse.Status {
    HTTPResponse.Status(code: response.status)
}

func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let bytes = (try? encoder.encode(value)) ?? Data("{}".utf8)
    return Response(
        status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
}

let arguments = CommandLine.arguments
if arguments.contains("--check-names") {
    // Builds without serving: proves the names resolve.
    let request = try notification(
        Notify(token: "00fc13adff78", title: "t", body: "b", category: "C"), topic: "com.example.app"
    )
    .request(to: Device(token: "00fc13adff78"))
    let response: HTTPResponse = HTTPResponse(status: status(of: APNsHTTPResponse(status: 200, headers: [])))
    print(request.path, response.status.code)
} else {
    let environment = ProcessInfo.processInfo.environment
    let level = environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))  // before the connector is made
    let logger = Logger(label: "push-service")
    let (connector, connectorService) = try makeConnector(environment, logger: Logger(label: "apns"))
    let topic = environment["APNS_TOPIC"] ?? "com.example.app"

    let router = Router()
    router.post("/notify") { request, context -> Response in
        guard let notify = try? await request.decode(as: Notify.self, context: context) else {
            return json(
                .badRequest, Outcome(error: #"expected {"type":"alert"|"background"|"voip","token":"<hex>",…}"#))
        }
        let result: Result<APNsResponse, APNsError>
        do throws(APNsError) {
            result = .success(try await deliver(notify, topic: topic, via: connector))
        } catch {
            result = .failure(error)
        }
        let (status, outcome) = answer(result)
        return json(status, outcome)
    }
    router.get("/metrics") { _, _ -> Response in
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
    }
    let app = Application(
        router: router,
        configuration: .init(
            address: .hostname(environment["HOST"] ?? "127.0.0.1", port: environment["PORT"].flatMap(Int.init) ?? 8080)),
        onServerRunning: { channel in
            // One line on standard output for scripts that start the service on port 0.
            print("listening \(channel.localAddress?.ipAddress ?? "?"):\(channel.localAddress?.port ?? 0)")
            fflush(nil)
        },
        logger: logger)
    // Shut down in reverse order: the HTTP server stops taking requests, then the connector drains.
    let group = ServiceGroup(
        configuration: .init(
            services: [.init(service: connectorService), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
    try await group.run()
}
