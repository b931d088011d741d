import APNs
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

// Every public APNs name used unqualified next to Foundation, swift-http-types, Hummingbird and
// NIO: none may be ambiguous. DSL names that an app may also define are qualified as `APNs.…`.

struct Notify: Decodable {
    var token: String
    var title: String
    var body: String
    var category: String?
}

/// The connector, chosen from the environment: token (APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID) or
/// certificate (APNS_P12, APNS_P12_PASSWORD); APNS_HOST=host:port for a mock server with
/// APNS_CA_FILE.
func makeConnector(_ environment: [String: String]) throws -> AnyConnector {
    var transport = TransportConfiguration()
    if let ca = environment["APNS_CA_FILE"] { transport.trustedCertificateAuthority = .file(path: ca) }
    var apnsEnvironment = APNsEnvironment.sandbox
    if let host = environment["APNS_HOST"], let colon = host.lastIndex(of: ":"), let port = Int(host[host.index(after: colon)...]) {
        apnsEnvironment = .custom(host: String(host[..<colon]), port: port)
    }
    if let keyFile = environment["APNS_KEY_FILE"] {
        return AnyConnector(try TokenConnector(
            teamID: environment["APNS_TEAM_ID"] ?? "", keyID: environment["APNS_KEY_ID"] ?? "", key: .file(path: keyFile),
            environment: apnsEnvironment, transport: transport))
    }
    return AnyConnector(try CertificateConnector(
        pkcs12: .file(path: environment["APNS_P12"] ?? "apns.p12"), password: environment["APNS_P12_PASSWORD"] ?? "",
        environment: apnsEnvironment, transport: transport))
}

func notification(_ request: Notify) -> AlertNotification<NoAppData> {
    AlertNotification(bundleID: "com.example.app") {
        Alert {
            Title(request.title)
            Body(request.body)
        }
        if let category = request.category { APNs.Category(category) }
        Sound.default
        Badge(1)
    }
}

/// swift-http-types' HTTPResponse and APNs' APNsHTTPResponse side by side.
func status(of response: APNsHTTPResponse) -> HTTPResponse.Status {
    HTTPResponse.Status(code: response.status)
}

let arguments = CommandLine.arguments
if arguments.contains("--check-names") {
    // Builds without serving: proves the names resolve.
    let request = try notification(Notify(token: "00fc13adff78", title: "t", body: "b", category: "C")).request(to: Device(token: "00fc13adff78"))
    let response: HTTPResponse = HTTPResponse(status: status(of: APNsHTTPResponse(status: 200, headers: [])))
    print(request.path, response.status.code)
} else {
    let connector = try makeConnector(ProcessInfo.processInfo.environment)
    let router = Router()
    router.post("/notify") { request, context -> HTTPResponse.Status in
        let body = try await request.decode(as: Notify.self, context: context)
        guard let device = try? Device(token: body.token) else { return .badRequest }
        do throws(APNsError) {
            try await send(notification(body), via: connector, to: device)
            return .accepted
        } catch {
            switch error {
            case .validation: return .badRequest
            case .rejected(let rejection): return rejection.status == 410 ? .gone : .badGateway
            default: return .serviceUnavailable
            }
        }
    }
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 8080)))
    try await app.runService()
}
