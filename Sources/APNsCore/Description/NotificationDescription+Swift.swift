#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension NotificationDescription {
    /// Where the Swift of ``swiftSource(to:)`` sends the notification.
    public enum SwiftTarget: Sendable, Equatable {
        /// A device, by its token in hex.
        case device(token: String)
        /// A Live Activity broadcast channel, by the id APNs gave it.
        case channel(id: String)
    }

    /// Swift that builds this notification with the library's typed notification and result
    /// builders, then the exact request to `target`: what the mock console's composer shows beside
    /// the request, so that a developer can paste it. It makes the same request as
    /// ``notification(now:payload:)`` builds for the description (a test compiles the code for
    /// every push type and compares its bytes).
    ///
    /// Call it for a description that ``notification(now:payload:)`` accepted: it assumes the rules
    /// hold (the code still throws where the library throws). A Live Activity's `timestamp`, when
    /// the description gives none, is `now`, as ``notification(now:payload:)`` takes it: the code
    /// then makes the same bytes.
    public func swiftSource(to target: SwiftTarget, now: Date) -> String {
        let name = PushType.Name(rawValue: pushType) ?? .alert
        var code = SwiftCode()
        let notification = notificationExpression(name, now: now)
        code.line("import APNs")
        if name == .liveactivity { code.line("import Foundation") }
        code.line("")
        code.line("let notification = \(notification)")
        switch target {
        case .device(let token):
            code.line("let device = try Device(token: \(SwiftCode.literal(token)))")
            code.line("// The exact request (method, path, headers, body) that `send` writes:")
            code.line("let request = try notification.request(to: device)")
            code.line("// Sent through a connector made once for the app's life:")
            code.line("// try await send(notification, via: connector, to: device)")
        case .channel(let id):
            code.line(
                "let channel = try BroadcastChannel(id: \(SwiftCode.literal(id)), bundleID: \(SwiftCode.literal(app ?? "")))"
            )
            code.line("// The exact request (method, path, headers, body) that `send` writes:")
            code.line("let request = try notification.request(to: channel)")
            code.line("// Sent through a connector made once for the app's life:")
            code.line("// try await send(notification, via: connector, to: channel)")
        }
        return code.text
    }

    /// The expression that makes the typed notification: a `switch` without `default`, so that a
    /// push type added to the library fails to compile here until the composer writes it.
    private func notificationExpression(_ name: PushType.Name, now: Date) -> String {
        let app = SwiftCode.literal(self.app ?? "")
        let appData = self.appData.map { "try RawJSONObject(\(SwiftCode.literal($0.compactText)))" }
        switch name {
        case .alert:
            var arguments = ["bundleID: \(app)"]
            if let appData { arguments.append("appData: \(appData)") }
            arguments += headerArguments(name)
            let list =
                arguments.count == 1
                ? arguments[0] : "\n" + arguments.map { "    \($0)" }.joined(separator: ",\n") + "\n"
            return "AlertNotification(\(list)) {\n\(alertComponents())}"
        case .background:
            return call(
                "BackgroundNotification", ["bundleID: \(app)"] + (appData.map { ["appData: \($0)"] } ?? []), name)
        case .voip, .complication, .pushtotalk:
            let type =
                [.voip: "VoIPNotification", .complication: "ComplicationNotification"][name] ?? "PushToTalkNotification"
            return call(type, ["bundleID: \(app)", "appData: \(appData ?? "NoAppData()")"], name)
        case .widgets: return call("WidgetNotification", ["bundleID: \(app)"], name)
        case .controls: return call("ControlsNotification", ["bundleID: \(app)"], name)
        case .location: return call("LocationNotification", ["bundleID: \(app)"], name)
        case .fileprovider:
            return call(
                "FileProviderNotification",
                [
                    "bundleID: \(app)", "containerIdentifier: \(SwiftCode.literal(containerIdentifier ?? ""))",
                    "domain: \(SwiftCode.literal(domain ?? ""))",
                ], name)
        case .mdm:
            return call("MDMNotification", ["topic: \(app)", "pushMagic: \(SwiftCode.literal(pushMagic ?? ""))"], name)
        case .accessory:
            return call(
                "AccessoryNotification",
                [
                    "bundleID: \(app)", "encryptedData: \(SwiftCode.literal(encryptedData ?? ""))",
                    "sessionIdentifier: \(SwiftCode.literal(sessionIdentifier ?? ""))",
                    "keyID: \(SwiftCode.literal(keyID ?? ""))", "messageIndex: \(messageIndex ?? 0)",
                ], name)
        case .liveactivity:
            return call("LiveActivityNotification", liveActivityArguments(app: app, now: now), name)
        }
    }

    /// `Type(arguments…, headers…)`, one argument a line.
    private func call(_ type: String, _ arguments: [String], _ name: PushType.Name) -> String {
        let all = arguments + headerArguments(name)
        return "\(type)(\n" + all.map { "    \($0)" }.joined(separator: ",\n") + "\n)"
    }

    /// `priority`, `expiration`, `collapseID` and `apnsID`, where given and where the push type's
    /// initializer takes them (background's priority and push-to-talk's priority and expiration
    /// are fixed by the type).
    private func headerArguments(_ name: PushType.Name) -> [String] {
        var arguments: [String] = []
        if let priority, name != .background, name != .pushtotalk {
            let member = [10: "immediate", 5: "powerConsiderate", 1: "low"][priority] ?? "immediate"
            arguments.append("priority: .\(member)")
        }
        if let expiration, name != .pushtotalk {
            arguments.append(
                expiration == 0 ? "expiration: .immediately" : "expiration: try Expiration(unixSeconds: \(expiration))")
        }
        if let collapseID { arguments.append("collapseID: \(SwiftCode.literal(collapseID))") }
        if let apnsID { arguments.append("apnsID: APNsID(\(SwiftCode.literal(apnsID)))") }
        return arguments
    }

    /// The alert's components in the builder, one a line.
    private func alertComponents() -> String {
        var lines: [String] = []
        if let alert {
            var parts: [String] = []
            func part(_ type: String, _ text: LocalizableText?) {
                switch text {
                case .text(let plain)?: parts.append("\(type)(\(SwiftCode.literal(plain)))")
                case .localized(let key, let arguments)?:
                    let list =
                        arguments.isEmpty
                        ? "" : ", arguments: [\(arguments.map(SwiftCode.literal).joined(separator: ", "))]"
                    parts.append("\(type)(localizedKey: \(SwiftCode.literal(key))\(list))")
                case nil: break
                }
            }
            part("Title", alert.title)
            part("Subtitle", alert.subtitle)
            part("Body", alert.body)
            if let image = alert.launchImage { parts.append("LaunchImage(\(SwiftCode.literal(image)))") }
            lines.append("Alert {")
            lines += parts.map { "    \($0)" }
            lines.append("}")
        }
        if let badge { lines.append("Badge(\(badge))") }
        if let sound {
            if let volume = sound.criticalVolume {
                lines.append("Sound.critical(\(SwiftCode.literal(sound.name)), volume: \(volume))")
            } else {
                lines.append("Sound(\(SwiftCode.literal(sound.name)))")
            }
        }
        if let threadID { lines.append("ThreadID(\(SwiftCode.literal(threadID)))") }
        if let category { lines.append("Category(\(SwiftCode.literal(category)))") }
        if let interruptionLevel {
            let member =
                ["passive": "passive", "active": "active", "time-sensitive": "timeSensitive", "critical": "critical"][
                    interruptionLevel] ?? "active"
            lines.append("InterruptionLevel.\(member)")
        }
        if let relevanceScore { lines.append("RelevanceScore(\(relevanceScore))") }
        if contentAvailable == true { lines.append("ContentAvailable()") }
        if mutableContent == true { lines.append("MutableContent()") }
        if let targetContentID { lines.append("TargetContentID(\(SwiftCode.literal(targetContentID)))") }
        if let filterCriteria { lines.append("FilterCriteria(\(SwiftCode.literal(filterCriteria)))") }
        return lines.map { "    \($0)\n" }.joined()
    }

    /// A Live Activity's arguments, in its event's initializer's order.
    private func liveActivityArguments(app: String, now: Date) -> [String] {
        func date(_ seconds: Int?) -> String {
            "Date(timeIntervalSince1970: \(seconds ?? Int(now.timeIntervalSince1970)))"
        }
        func text(_ text: LocalizableText?) -> String {
            switch text {
            case .text(let plain)?: return SwiftCode.literal(plain)
            case .localized(let key, let arguments)?:
                return
                    ".localized(key: \(SwiftCode.literal(key)), arguments: [\(arguments.map(SwiftCode.literal).joined(separator: ", "))])"
            case nil: return "\"\""
            }
        }
        let state = "try RawJSONObject(\(SwiftCode.literal(contentState?.compactText ?? "{}")))"
        let liveAlert = alert.map { alert in
            "LiveActivityAlert(title: \(text(alert.title)), body: \(text(alert.body))"
                + (sound.map { ", sound: \(SwiftCode.literal($0.name))" } ?? "") + ")"
        }
        var arguments = ["bundleID: \(app)"]
        switch event {
        case LiveActivityEvent.Start.name?:
            arguments.append("start: \(state)")
            arguments.append("attributesType: \(SwiftCode.literal(attributesType ?? ""))")
            arguments.append("attributes: try RawJSONObject(\(SwiftCode.literal(attributes?.compactText ?? "{}")))")
            arguments.append("alert: \(liveAlert ?? "LiveActivityAlert(title: \"\", body: \"\")")")
            arguments.append("timestamp: \(date(timestamp))")
            if inputPushToken == true { arguments.append("pushInput: .token") }
            if let inputPushChannel {
                arguments.append(
                    "pushInput: .channel(try BroadcastChannel(id: \(SwiftCode.literal(inputPushChannel)), bundleID: \(app)))"
                )
            }
        case LiveActivityEvent.End.name?:
            arguments.append("end: \(state)")
            arguments.append("timestamp: \(date(timestamp))")
            if let dismissalDate { arguments.append("dismissalDate: \(date(dismissalDate))") }
            if let liveAlert { arguments.append("alert: \(liveAlert)") }
        default:
            arguments.append("update: \(state)")
            arguments.append("timestamp: \(date(timestamp))")
            if let liveAlert { arguments.append("alert: \(liveAlert)") }
        }
        if let staleDate { arguments.append("staleDate: \(date(staleDate))") }
        if let relevanceScore { arguments.append("relevanceScore: \(relevanceScore)") }
        return arguments
    }
}

/// Swift source, a line at a time.
struct SwiftCode {
    private(set) var text = ""

    mutating func line(_ line: String) { text += line + "\n" }

    /// A Swift string literal that reads as `text`: a raw string (`#"{"a":1}"#`) for text with
    /// quotes or backslashes and no control characters, so JSON reads as JSON; otherwise quotes,
    /// backslashes and control characters escaped, everything else as it is.
    static func literal(_ text: String) -> String {
        let control = text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        if !control, text.contains("\"") || text.contains("\\") {
            var hashes = "#"
            while text.contains("\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
            return hashes + "\"" + text + "\"" + hashes
        }
        var literal = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": literal += "\\\""
            case "\\": literal += "\\\\"
            case "\n": literal += "\\n"
            case "\r": literal += "\\r"
            case "\t": literal += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                literal += "\\u{\(String(scalar.value, radix: 16))}"
            default: literal.unicodeScalars.append(scalar)
            }
        }
        return literal + "\""
    }
}
