@_spi(RawRequests) @_spi(Description) import APNs
import ArgumentParser
import Foundation
import Synchronization

/// `apns send`: one notification to one or more devices.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a notification to one or more device tokens.",
        discussion: """
            Authenticate with a token (--key-file, --key-id, --team-id) or a certificate (--cert and \
            --key, or --p12). Secrets are read from files or environment variables and never printed.

            With --dry-run the exact request is printed and nothing is sent.

            With --json, one JSON object per device per line: {"token":…,"status":…,"apns-id":…} \
            (plus "reason" when rejected), or {"token":…,"error":{"kind":…,"delivery":"not-sent"|"unknown",\
            "message":…}}. The exit code is 0 only when every device was accepted.

            With --tokens-file (one hex token a line; - reads standard input) the notification goes to \
            every token through the bulk path, many requests multiplexed on one connection. Standard \
            error shows a progress bar with rate and ETA on a terminal (a plain progress line every 2 s \
            otherwise), rejections and failures are printed as they come, and a summary ends the run \
            (sent, delivered, rejected by reason, failed by kind, p50/p99 latency, elapsed). With --json \
            only the per-device lines are printed.

            \(Failure.exitCodes)
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "The app's bundle id; the push type's topic suffix is added for you.") var topic: String
    @Option(name: .customLong("token"), help: "A device token in hex (repeatable).") var tokens: [String] = []
    @Option(
        name: .customLong("tokens-file"),
        help: "A file of device tokens, one hex token a line ('-' for standard input): sent with the bulk path.")
    var tokensFile: String?
    @Option(
        name: .customLong("max-in-flight"), parsing: .unconditional,
        help: "With --tokens-file: requests in flight at most (default: the connection's capacity).")
    var maximumInFlight: Int?
    @Option(
        name: .customLong("unregistered-out"),
        help:
            "With --tokens-file: write the tokens APNs answered 410 Unregistered for, with its timestamp (CSV for a .csv name, else JSON lines)."
    ) var unregisteredOut: String?
    @Option(help: "Broadcast to this Live Activity channel id instead of devices (update and end only).") var channel:
        String?

    @Option(
        name: .customLong("push-type"),
        help:
            "accessory, alert, background, complication, controls, fileprovider, liveactivity, location, mdm, pushtotalk, voip or widgets."
    ) var pushType = "alert"
    @Option var title: String?
    @Option var subtitle: String?
    @Option var body: String?
    @Option(parsing: .unconditional) var badge: Int?
    @Option var sound: String?
    @Option(help: "App data: a JSON object written beside aps, in its own key order.") var data: String?
    @Option(help: "A file whose JSON is sent as the body exactly (validated, not re-ordered).") var payload: String?
    @Option(parsing: .unconditional, help: "10, 5 or 1 (alert only); each push type's allowed priorities apply.")
    var priority: Int?
    @Option(parsing: .unconditional, help: "UNIX seconds; 0 = deliver once, never store.") var expiration: Int?
    @Option(name: .customLong("collapse-id")) var collapseID: String?
    @Option(name: .customLong("apns-id")) var apnsID: String?
    @Flag(name: .customLong("dry-run"), help: "Print the exact request; send nothing.") var dryRun = false
    @Flag(
        help:
            "alert: shorten the body (then subtitle, then title) so the payload fits 4096 bytes, and say what was cut.")
    var truncate = false
    @Option(parsing: .unconditional, help: "Seconds each send may take, from the start, retries included (default 30).")
    var timeout: Double?
    @Option(
        parsing: .unconditional,
        help: "Attempts per device, the first included: retries only what was not sent and 429/5xx (default 1).")
    var retries: Int?
    @Flag(help: "One JSON object per device per line.") var json = false

    @Option(name: .customLong("push-magic"), help: "mdm: the device's PushMagic (--topic is the MDM certificate UID).")
    var pushMagic: String?
    @Option(name: .customLong("container-identifier"), help: "fileprovider: the container identifier.")
    var containerIdentifier: String?
    @Option(help: "fileprovider: the domain.") var domain: String?
    @Option(name: .customLong("encrypted-data"), help: "accessory: the accessory's encrypted response, base64.")
    var encryptedData: String?
    @Option(name: .customLong("session-identifier"), help: "accessory: the session identifier the accessory sent.")
    var sessionIdentifier: String?
    @Option(name: .customLong("accessory-key-id"), help: "accessory: the ratchet's key id, base64 (keyID).")
    var accessoryKeyID: String?
    @Option(
        name: .customLong("message-index"), parsing: .unconditional, help: "accessory: the ratchet's message index.")
    var messageIndex: Int?
    @Option(help: "liveactivity: start, update or end.") var event: String?
    @Option(name: .customLong("content-state"), help: "liveactivity: the content state as a JSON object.")
    var contentState: String?
    @Option(help: "liveactivity start: the attributes as a JSON object.") var attributes: String?
    @Option(name: .customLong("attributes-type"), help: "liveactivity start: the ActivityAttributes type name.")
    var attributesType: String?
    @Option(parsing: .unconditional, help: "liveactivity: UNIX seconds of the content state (default: now).")
    var timestamp: Int?
    @Option(name: .customLong("stale-date"), parsing: .unconditional, help: "liveactivity: UNIX seconds.")
    var staleDate: Int?
    @Option(name: .customLong("dismissal-date"), parsing: .unconditional, help: "liveactivity end: UNIX seconds.")
    var dismissalDate: Int?
    @Option(name: .customLong("relevance-score"), parsing: .unconditional, help: "liveactivity: relevance score.")
    var relevanceScore: Double?
    @Flag(name: .customLong("input-push-token"), help: "liveactivity start: ask for a per-activity push token.")
    var inputPushToken = false
    @Option(
        name: .customLong("input-push-channel"), help: "liveactivity start: subscribe to this broadcast channel id.")
    var inputPushChannel: String?

    func run() async throws {
        try await Failure.reporting {
            guard (tokens.isEmpty && tokensFile == nil) != (channel == nil) else {
                throw UsageError("give --token (repeatable), --tokens-file or --channel; a channel takes no tokens")
            }
            _ = try sendOptions()  // checked before anything else, --dry-run included
            if tokensFile == nil, maximumInFlight != nil || unregisteredOut != nil {
                throw UsageError("--max-in-flight and --unregistered-out go with --tokens-file")
            }
            try await connection.withConnector { connector in try await sendOrPrint(via: connector) }
        }
    }

    /// Builds the requests and sends them (or prints them under `--dry-run`).
    private func sendOrPrint(via connector: AnyConnector?) async throws {
        if let tokensFile {
            return try await bulk(
                tokens: try tokens.map { try Device(token: $0) } + BulkDelivery.readTokens(from: tokensFile),
                via: connector)
        }
        let requests: [APNsRequest]
        if let channel {
            requests = [try broadcastRequest(to: BroadcastChannel(id: channel, bundleID: topic))]
        } else {
            requests = try tokens.map { try request(to: Device(token: $0)) }
        }
        // The library checks again on every send; checking here also covers --dry-run.
        if let connector { for request in requests { try request.checkRules(for: connector.authenticationMethod) } }
        if dryRun {
            let blocks = requests.map { request in
                let auth: [APNsRequest.Header] =
                    connector?.authenticationMethod == .token ? [.init(.authorization, value: "bearer ")] : []
                return Output.request(
                    method: request.method.rawValue, path: request.path, headers: auth + request.headers,
                    body: request.bodyText)
            }
            print(blocks.joined(separator: "\n\n"))
            return
        }
        guard let connector else {
            throw UsageError("give credentials: --key-file/--key-id/--team-id, --cert/--key, or --p12/--password-env")
        }
        try await deliver(requests, via: connector)
    }

    /// `--tokens-file`: one request, checked once, to every device through the bulk path.
    private func bulk(tokens devices: [Device], via connector: AnyConnector?) async throws {
        let template = try request(to: devices[0])
        if let connector { try template.checkRules(for: connector.authenticationMethod) }
        if dryRun {
            let auth: [APNsRequest.Header] =
                connector?.authenticationMethod == .token ? [.init(.authorization, value: "bearer ")] : []
            print(
                Output.request(
                    method: template.method.rawValue, path: template.path, headers: auth + template.headers,
                    body: template.bodyText))
            if devices.count > 1 {
                print("\n(the same request to \(devices.count - 1) more devices, each to its own /3/device/<token>)")
            }
            return
        }
        guard let connector else {
            throw UsageError("give credentials: --key-file/--key-id/--team-id, --cert/--key, or --p12/--password-env")
        }
        if let maximumInFlight, maximumInFlight < 1 {
            throw UsageError("--max-in-flight \(maximumInFlight) must be at least 1")
        }
        let (timeout, retry) = try sendOptions()
        let code = try await BulkDelivery(
            template: template, devices: devices, connector: connector, timeout: timeout, retry: retry,
            maximumInFlight: maximumInFlight, json: json, unregisteredOut: unregisteredOut
        ).run()
        if code != .success { throw code }
    }

    /// `--timeout` and `--retries`, checked.
    private func sendOptions() throws -> (Duration?, RetryPolicy) {
        let longest = TransportConfiguration.maximumDuration / .seconds(1)
        if let timeout, !(timeout >= 0.001) || !(timeout <= longest) {
            throw UsageError("--timeout \(timeout) must be from 0.001 to \(Int(longest)) seconds (24 hours)")
        }
        if let retries, retries < 1 {
            throw UsageError("--retries \(retries) must be at least 1 (attempts, the first included)")
        }
        return (
            self.timeout.map { Duration.milliseconds(Int64(($0 * 1000).rounded(.up))) },
            retries.map(RetryPolicy.attempts) ?? .none
        )
    }

    private func deliver(_ requests: [APNsRequest], via connector: AnyConnector) async throws {
        let (timeout, retry) = try sendOptions()
        let results = await withTaskGroup(of: (Int, Result<APNsResponse, APNsError>).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask {
                    do throws(APNsError) {
                        return (
                            index,
                            .success(try await send(request: request, via: connector, timeout: timeout, retry: retry))
                        )
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var collected = [Result<APNsResponse, APNsError>?](repeating: nil, count: requests.count)
            for await (index, result) in group { collected[index] = result }
            return collected
        }
        var worst: ExitCode = .success
        var tokenUpdatesRefused: APNsRejection?
        for (index, result) in results.enumerated() {
            let target = channel ?? requests[index].path.split(separator: "/").last.map(String.init) ?? ""
            if json {
                print(Output.jsonLine(target: target, isChannel: channel != nil, result: result))
            }
            switch result {
            case .success(let response)?:
                guard !json else { break }
                if channel != nil {
                    print(
                        "\(target) \(response.status) apns-request-id \(response.requestID ?? "-") apns-unique-id \(response.uniqueID ?? "-")"
                    )
                } else {
                    print("\(target) \(response.status) apns-id \(response.apnsID?.description ?? "-")")
                }
            case .failure(.rejected(let rejection))?:
                if !json {
                    print(
                        "\(target) \(rejection.status) \(rejection.reason?.rawValue ?? "-") apns-id \(rejection.apnsID?.description ?? "-")"
                    )
                }
                if worst == .success { worst = Failure.rejected }
                if rejection.reason == .tooManyProviderTokenUpdates { tokenUpdatesRefused = rejection }
            case .failure(let error)?:
                let (message, code) = Failure.describe(error)
                if !json { print("\(target) error \(message)") }
                worst = code
            case nil:
                worst = ExitCode(5)
            }
        }
        if let tokenUpdatesRefused {
            // The cause and the fix, once: a per-device line has room for the reason only.
            FileHandle.standardError.write(Data("apns: \(Failure.describe(tokenUpdatesRefused).0)\n".utf8))
        }
        if worst != .success { throw worst }
    }

    // MARK: Building the request

    /// Whether `--truncate`'s report was printed: once per run, not once per device.
    private static let truncationReported = Mutex(false)

    private func request(to device: Device) throws -> APNsRequest {
        if truncate, pushType != PushType.alert.rawValue || payload != nil {
            throw UsageError(
                "--truncate shortens the text of --title/--subtitle/--body on an alert; it does not apply to \(payload != nil ? "a --payload file" : pushType)"
            )
        }
        var notification = try typedNotification()
        if truncate, let alert = notification as? AlertNotification<RawJSONObject> {
            let fitted = try alert.truncatedToFit()
            notification = fitted.notification
            if fitted.wasTruncated,
                SendCommand.truncationReported.withLock({ reported in
                    defer { reported = true }; return !reported
                })
            {
                FileHandle.standardError.write(
                    Data(
                        ("apns: truncated to fit \(fitted.limit) bytes (was \(fitted.originalSize)): "
                            + fitted.cuts.map(\.description).joined(separator: "; ") + "\n").utf8))
            }
        }
        var request = try notification.request(to: device)
        if let payload {
            let type = type(of: notification).pushType
            guard let bytes = FileManager.default.contents(atPath: payload) else {
                throw UsageError("cannot read --payload \(payload)")
            }
            guard (try? JSONSerialization.jsonObject(with: bytes)) is [String: Any] else {
                throw UsageError("--payload \(payload) is not a JSON object")
            }
            guard bytes.count <= type.maximumPayloadSize else {
                throw APNsValidationError.payloadTooLarge(
                    pushType: type, size: bytes.count, limit: type.maximumPayloadSize)
            }
            request.body = Array(bytes)
        }
        return request
    }

    /// A Live Activity update or end to a broadcast channel (protocol reference, Broadcast channels).
    private func broadcastRequest(to channel: BroadcastChannel) throws -> APNsRequest {
        guard pushType == PushType.liveactivity.rawValue,
            event == LiveActivityEvent.Update.name || event == LiveActivityEvent.End.name
        else {
            throw UsageError("--channel takes --push-type liveactivity with --event update or end")
        }
        guard let broadcast = try typedNotification() as? any BroadcastDeliverable else {
            throw UsageError("--channel takes --push-type liveactivity with --event update or end")
        }
        return try broadcast.request(to: channel)
    }

    /// The push type's typed notification, read from the flags by the library's description of a
    /// notification (the push gateway reads its JSON into the same one), so its rules apply. With
    /// `--payload`, the fields only the payload carries may be left out.
    private func typedNotification() throws -> any PushNotification {
        var description = NotificationDescription(pushType: pushType)
        description.app = topic
        typealias Field<Value> = WritableKeyPath<NotificationDescription, Value?>
        let texts: [(Field<String>, String?)] = [
            (\.collapseID, collapseID), (\.apnsID, apnsID), (\.containerIdentifier, containerIdentifier),
            (\.domain, domain), (\.encryptedData, encryptedData), (\.sessionIdentifier, sessionIdentifier),
            (\.keyID, accessoryKeyID), (\.pushMagic, pushMagic), (\.event, event), (\.attributesType, attributesType),
            (\.inputPushChannel, inputPushChannel),
        ]
        let numbers: [(Field<Int>, Int?)] = [
            (\.priority, priority), (\.expiration, expiration), (\.badge, badge), (\.messageIndex, messageIndex),
            (\.timestamp, timestamp), (\.dismissalDate, dismissalDate), (\.staleDate, staleDate),
        ]
        let objects: [(Field<RawJSONObject>, String?)] = [
            (\.appData, data), (\.contentState, contentState), (\.attributes, attributes),
        ]
        for (field, value) in texts { description[keyPath: field] = value }
        for (field, value) in numbers { description[keyPath: field] = value }
        for (field, value) in objects { description[keyPath: field] = try value.map { try RawJSONObject($0) } }
        if title != nil || subtitle != nil || body != nil {
            description.alert = .init(
                title: title.map(LocalizableText.text), subtitle: subtitle.map(LocalizableText.text),
                body: body.map(LocalizableText.text))
        }
        description.sound = sound.map { Sound($0) }
        description.relevanceScore = relevanceScore
        description.inputPushToken = inputPushToken ? true : nil
        do {
            return try description.notification(now: Date(), payload: payload != nil ? .replaced : .built)
        } catch {
            let message = error.message(naming: { SendCommand.flag(for: $0, part: nil) })
            let field = SendCommand.flag(for: error.field, part: error.part)
            throw UsageError(error.form == .predicate ? "\(field) \(message)" : message)
        }
    }

    /// The flag that gives `field`: a `switch` without `default`, so that a field the library adds
    /// fails to compile here until `apns send` has a flag for it (or says it has none).
    static func flag(for field: NotificationField, part: NotificationDescription.Problem.AlertPart?) -> String {
        switch field {
        case .pushType: "--push-type"
        case .bundleID, .topic: "--topic"
        case .alert:
            switch part {
            case .title?: "--title"
            case .subtitle?: "--subtitle"
            case .body?: "--body"
            case .launchImage?: "the alert's launch image (apns send has no flag for it)"
            case nil: "--title and --body"
            }
        case .keyID: "--accessory-key-id"
        // Flags named as the field is.
        case .appData, .inputPushToken, .priority, .expiration, .collapseID, .apnsID, .badge, .sound, .relevanceScore,
            .containerIdentifier,
            .domain, .encryptedData, .sessionIdentifier, .messageIndex, .pushMagic, .event, .contentState,
            .timestamp, .dismissalDate, .staleDate, .attributesType, .attributes, .inputPushChannel:
            "--" + field.rawValue
        // What apns send does not offer: use --payload for a body that needs them.
        case .threadID, .category, .interruptionLevel, .contentAvailable, .mutableContent, .targetContentID,
            .filterCriteria:
            "\(field.rawValue) (apns send has no flag for it; give the body with --payload)"
        }
    }
}
