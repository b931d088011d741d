import APNs
import Foundation

/// The mock's console API as a value: a request (method, path, query, body) in, a status and a
/// JSON body out, with no I/O of its own — ``MockConsole`` serves it over HTTP, and tests call it
/// directly. `Docs/MockConsole.openapi.yaml` describes it.
///
/// - `GET /api/requests?app=&device=&push-type=&verdict=&since=`: what the mock received, oldest
///   first, each with its number, device, push type, priority, topic, collapse id, expiration,
///   verdict (`accepted`, APNs' reason, or what a fault did), the token's claims (never a key or a signature), the
///   headers and the body; `next-since` for the next page.
/// - `GET /api/requests/await?count=N&timeout-ms=T&…`: waits until N requests match the filters
///   (those already received included), then answers them; 408 when the time passes first.
/// - `DELETE /api/requests`: forgets them.
/// - `POST /api/devices {"app", "environment"}`: a new device token for an app; `GET /api/devices`
///   lists them; `DELETE /api/devices/{token}`: the app is removed from the device, and every
///   later push to it is answered 410 Unregistered with that time.
/// - `PUT /api/fault {"fault": "status:503:30", "connections"?, "requests"?}`: the mock misbehaves
///   as `apns mock-server --fault` says; `DELETE /api/fault` ends it.
/// - `GET /api/push-types`: what the composer offers per push type (fields, priorities, connector
///   kinds, targets), from the library's rules, and the destinations it can send to.
/// - `POST /api/compose {"notification": {…}, "device" | "channel", "connector"?, "send"?}`: the
///   notification checked by the library's rules, its exact request and the Swift that builds it;
///   with `send`, also sent through that ``Destination``'s connector and APNs' answer (`Composer`).
///
/// Thread safety: `Sendable`; its state is the server's (devices, records, faults).
public final class ConsoleAPI: Sendable {
    /// A request to the API.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [String: String]
        public var body: [UInt8]

        public init(method: String, path: String, query: [String: String] = [:], body: [UInt8] = []) {
            self.method = method
            self.path = path
            self.query = query
            self.body = body
        }

        /// From a request target (`/api/requests?app=com.example.app`).
        public init(method: String, target: String, body: [UInt8] = []) {
            let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            var query: [String: String] = [:]
            if parts.count == 2 {
                for pair in parts[1].split(separator: "&") {
                    let keyValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    let key = String(keyValue[0]).removingPercentEncoding ?? String(keyValue[0])
                    let value = keyValue.count == 2 ? String(keyValue[1]).removingPercentEncoding ?? "" : ""
                    query[key] = value
                }
            }
            self.init(method: method, path: String(parts[0]), query: query, body: body)
        }
    }

    /// An answer: a status and a body, JSON (empty for 204) or the page.
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var body: String
        public var contentType = "application/json"
    }

    /// Where the composer sends: a name (`mock`, `sandbox`) and its connectors, one per kind of
    /// authentication. The console uses them and never shuts them down: whoever made them does.
    public struct Destination: Sendable {
        public var name: String
        public var connectors: [AnyConnector]

        public init(name: String, connectors: [AnyConnector]) {
            self.name = name
            self.connectors = connectors
        }
    }

    let server: MockAPNsServer
    let destinations: [Destination]

    /// The API of `server`; the composer sends to `destinations` (none: it composes only).
    public init(server: MockAPNsServer, destinations: [Destination] = []) {
        self.server = server
        self.destinations = destinations
    }

    /// The answer to `request`.
    public func answer(_ request: Request) async -> Response {
        let path = request.path.split(separator: "/").map(String.init)
        switch (request.method, path) {
        case ("GET", []):
            return Response(status: 200, body: ConsolePage.html, contentType: "text/html; charset=utf-8")
        case ("GET", ["api", "requests"]):
            return listRequests(request.query)
        case ("GET", ["api", "requests", "await"]):
            return await awaitRequests(request.query)
        case ("DELETE", ["api", "requests"]):
            server.clearRequests()
            return Response(status: 204, body: "")
        case ("POST", ["api", "devices"]):
            return makeDevice(request.body)
        case ("GET", ["api", "devices"]):
            return Self.json(200, ["devices": server.devices.map(Self.object)])
        case ("DELETE", let parts) where parts.count == 3 && parts[0] == "api" && parts[1] == "devices":
            return removeApp(from: parts[2])
        case ("PUT", ["api", "fault"]):
            return setFault(request.body)
        case ("DELETE", ["api", "fault"]):
            server.inject(nil)
            return Response(status: 204, body: "")
        case ("GET", ["api", "push-types"]):
            return Self.json(
                200,
                [
                    "push-types": Composer.pushTypes,
                    "destinations": destinations.map { destination in
                        [
                            "name": destination.name,
                            "connectors": destination.connectors.map(\.authenticationMethod.rawValue).sorted(),
                        ] as [String: Any]
                    },
                ])
        case ("POST", ["api", "compose"]):
            return await compose(request.body)
        default:
            return Self.problem(
                404,
                "no such route: the console serves its page at GET /, and GET /api/requests, GET /api/requests/await, DELETE /api/requests, GET and POST /api/devices, DELETE /api/devices/{token}, PUT and DELETE /api/fault, GET /api/push-types, POST /api/compose"
            )
        }
    }

    // MARK: Requests

    /// Which requests a query picks: by app (topic without a push-type suffix), device token,
    /// push type, verdict (`accepted`, `rejected`, `faulted` — dealt with by a fault — or a reason),
    /// and number (`since`).
    struct Filter: Sendable {
        var app: String?
        var device: String?
        var pushType: String?
        var verdict: String?
        var since = 0

        init(_ query: [String: String]) throws(ConsoleProblem) {
            app = query["app"]
            device = query["device"]?.lowercased()
            pushType = query["push-type"]
            verdict = query["verdict"]
            if let text = query["since"] {
                guard let number = Int(text), number >= 0 else {
                    throw ConsoleProblem("since is \(text); give the next-since of the previous page (0 or more)")
                }
                since = number
            }
        }

        func admits(_ request: RecordedRequest, number: Int) -> Bool {
            guard number > since else { return false }
            let view = ReceivedView(request)
            if let app, view.app != app { return false }
            if let device, view.device != device { return false }
            if let pushType, view.pushType != pushType { return false }
            if let verdict {
                switch verdict {
                case "accepted": if request.status != 200 { return false }
                case "rejected": if request.status == 200 { return false }
                case "faulted": if request.fault == nil { return false }
                default: if request.reason != verdict { return false }
                }
            }
            return true
        }
    }

    func listRequests(_ query: [String: String]) -> Response {
        let filter: Filter
        do { filter = try Filter(query) } catch { return Self.problem(400, error.message) }
        let (first, records) = server.state.numberedRecords
        var picked: [[String: Any]] = []
        for (index, record) in records.enumerated() where filter.admits(record, number: first + index) {
            picked.append(ReceivedView(record).object(number: first + index))
        }
        return Self.json(200, ["requests": picked, "next-since": first + records.count - 1])
    }

    func awaitRequests(_ query: [String: String]) async -> Response {
        let filter: Filter
        do { filter = try Filter(query) } catch { return Self.problem(400, error.message) }
        guard let count = query["count"].flatMap(Int.init), (1...100_000).contains(count) else {
            return Self.problem(400, "give count=N (1 to 100000): how many matching requests to wait for")
        }
        guard let milliseconds = query["timeout-ms"].flatMap(Int.init), (1...600_000).contains(milliseconds) else {
            return Self.problem(400, "give timeout-ms=T (1 to 600000): how long to wait")
        }
        // Numbers are not known to the server's predicate: it waits on the other filters, and
        // `since` is applied to what it then lists.
        var unnumbered = filter
        unnumbered.since = -1
        let already = server.state.numberedRecords
        let before = already.records.enumerated().filter {
            unnumbered.admits($0.element, number: 0) && already.first + $0.offset <= filter.since
        }.count
        let predicate = unnumbered
        let reached = await server.receivedRequests(count: count + before, within: .milliseconds(milliseconds)) {
            predicate.admits($0, number: 0)
        }
        guard reached else {
            return Self.problem(408, "fewer than \(count) matching requests arrived within \(milliseconds) ms")
        }
        return listRequests(query)
    }

    // MARK: Devices

    func makeDevice(_ body: [UInt8]) -> Response {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let app = object["app"] as? String, !app.isEmpty
        else {
            return Self.problem(400, #"give {"app": "<bundle id>", "environment": "sandbox" or "production"}"#)
        }
        let environment = object["environment"] as? String ?? "sandbox"
        guard environment == "sandbox" || environment == "production" else {
            return Self.problem(400, "environment is \(environment); give sandbox or production")
        }
        let device = server.makeDevice(bundleID: app, environment: environment == "production" ? .production : .sandbox)
        return Self.json(201, Self.object(device))
    }

    func removeApp(from token: String) -> Response {
        let token = token.lowercased()
        guard token.count >= 2, token.allSatisfy(\.isHexDigit) else {
            return Self.problem(400, "\(token) is not a device token; give its hex digits")
        }
        let removedAt = server.removeApp(from: token)
        let removed =
            server.devices.first { $0.token == token }
            ?? MockDevice(token: token, bundleID: "", environment: .sandbox, appRemovedAt: removedAt)
        return Self.json(200, Self.object(removed))
    }

    // MARK: Composer

    func compose(_ body: [UInt8]) async -> Response {
        let composition: Composer.Composition
        do { composition = try Composer.compose(body, now: server.state.configuration.clock()) } catch {
            var object: [String: Any] = ["status": error.status, "detail": error.message]
            if let field = error.field { object["field"] = field }
            return Self.json(error.status, object)
        }
        var answer = composition.object
        if let name = composition.send {
            guard let destination = destinations.first(where: { $0.name == name }) else {
                let names = destinations.map(\.name)
                return Self.json(
                    422,
                    [
                        "status": 422, "field": "send",
                        "detail": names.isEmpty
                            ? "this console sends nowhere; start it with apns mock-server --console to send to the mock"
                            : "\(name) is not a destination; give \(names.joined(separator: " or "))",
                    ])
            }
            guard
                let connector = destination.connectors.first(where: {
                    $0.authenticationMethod == composition.connector
                })
            else {
                let kinds = destination.connectors.map(\.authenticationMethod.rawValue).sorted()
                return Self.json(
                    422,
                    [
                        "status": 422, "field": "connector",
                        "detail":
                            "\(name) has no \(composition.connector.rawValue) connector; it has \(kinds.joined(separator: " and ")): pick one the push type allows",
                    ])
            }
            answer["sent"] = await Composer.send(composition, via: connector)
            answer["destination"] = name
        }
        return Self.json(200, answer)
    }

    // MARK: Faults

    func setFault(_ body: [UInt8]) -> Response {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let text = object["fault"] as? String, let fault = MockAPNsServer.Fault(parsing: text)
        else {
            return Self.problem(
                400,
                #"give {"fault": "<fault>"} as apns mock-server --fault takes it: reset-after:N, close-after:N, never-answer, never-answer-after:N, silent-after-idle:MS, stall-handshake, unrelated-key, delay:MS, rst-stream:CODE, rst-stream-after-processing:CODE, goaway:AFTER:CODE:LOWER-BY[:DEBUG] or status:CODE[:RETRY-AFTER]; "connections" and "requests" limit it"#
            )
        }
        let connections = object["connections"] as? Int
        let requests = object["requests"] as? Int
        server.inject(fault, connections: connections, requests: requests)
        var answer: [String: Any] = ["fault": text, "description": fault.description]
        if let connections { answer["connections"] = connections }
        if let requests { answer["requests"] = requests }
        return Self.json(200, answer)
    }

    // MARK: JSON

    static func object(_ device: MockDevice) -> [String: Any] {
        var object: [String: Any] = [
            "token": device.token, "app": device.bundleID,
            "environment": device.environment == .production ? "production" : "sandbox",
        ]
        if let removedAt = device.appRemovedAt {
            object["app-removed-at"] = APNsRejection.millisecondsSince1970(removedAt)
        }
        return object
    }

    static func json(_ status: Int, _ object: [String: Any]) -> Response {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return Response(status: status, body: String(decoding: data, as: UTF8.self))
    }

    static func problem(_ status: Int, _ detail: String) -> Response {
        json(status, ["status": status, "detail": detail])
    }
}

/// What is wrong with a console request, and how to fix it.
struct ConsoleProblem: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A recorded request as the console shows it.
struct ReceivedView {
    let request: RecordedRequest

    init(_ request: RecordedRequest) { self.request = request }

    /// The device token of a `/3/device/…` path.
    var device: String? {
        request.path.hasPrefix("/3/device/") ? String(request.path.dropFirst("/3/device/".count)).lowercased() : nil
    }

    var topic: String? { request[header: "apns-topic"] }

    /// The topic without a push type's suffix: the app.
    var app: String? {
        guard let topic else { return nil }
        for suffix in [".voip", ".complication", ".pushkit.fileprovider", ".location-query", ".voip-ptt"]
        where topic.hasSuffix(suffix) {
            return String(topic.dropLast(suffix.count))
        }
        if let range = topic.range(of: ".push-type.") { return String(topic[..<range.lowerBound]) }
        return topic
    }

    var pushType: String? { request[header: "apns-push-type"] }

    /// `accepted`, APNs' reason, the status without one, or — for a request a fault left
    /// unanswered — `fault: ` and what the fault did.
    static func verdict(_ request: RecordedRequest) -> String {
        if request.status == 200 { return "accepted" }
        if let reason = request.reason { return reason }
        if request.status == 0, let fault = request.fault { return "fault: \(fault)" }
        return "status \(request.status)"
    }

    func object(number: Int) -> [String: Any] {
        var object: [String: Any] = [
            "number": number, "method": request.method, "path": request.path, "status": request.status,
            "verdict": Self.verdict(request),
            "received-at": APNsRejection.millisecondsSince1970(request.receivedAt),
            // The bearer token is a signed credential: its claims are shown below, never it.
            "headers": request.headers.map {
                [$0.name, $0.name == "authorization" ? "bearer (redacted: see authentication)" : $0.value]
            },
            "body": request.bodyText,
        ]
        if let device { object["device"] = device }
        if let topic { object["topic"] = topic }
        if let app { object["app"] = app }
        if let pushType { object["push-type"] = pushType }
        for (header, key) in [
            ("apns-priority", "priority"), ("apns-collapse-id", "collapse-id"), ("apns-expiration", "expiration"),
        ] {
            if let value = request[header: header] { object[key] = Int(value) ?? value }
        }
        if let apnsID = request.apnsID { object["apns-id"] = apnsID }
        if let reason = request.reason { object["reason"] = reason }
        if let fault = request.fault { object["fault"] = fault }
        if let payload = try? JSONSerialization.jsonObject(with: Data(request.body)) { object["payload"] = payload }
        switch request.authentication {
        case .token(let teamID, let keyID, let issuedAt):
            // The token's claims, never the token (its signature) or a key.
            object["authentication"] = ["kind": "token", "team-id": teamID, "key-id": keyID, "issued-at": issuedAt]
        case .certificate(let commonName):
            object["authentication"] = ["kind": "certificate", "common-name": commonName]
        case .none:
            object["authentication"] = ["kind": "none"]
        }
        return object
    }
}
