@_spi(Description) import APNs
import Foundation
import Logging
import Synchronization

/// A swift-log handler that writes one JSON object per line to standard error, for a log
/// pipeline (journald, a container runtime, Loki, Elasticsearch) to read without parsing text:
///
/// ```json
/// {"label":"apns-gateway","level":"info","message":"registered","metadata":{"instance":"a"},"source":"APNsGateway","time":"2026-12-06T17:25:00.123Z"}
/// ```
///
/// Keys are sorted, so a line's bytes depend only on what was logged. It writes what the gateway
/// logs, which never carries a token, a key or a secret (`apns-gateway serve --log-format json`).
///
/// Thread safety: a value; each line is written with one `write(2)`, so lines from concurrent
/// tasks do not interleave.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    let label: String
    /// The time each line carries.
    let clock: any GatewayClock
    /// Where a line goes (standard error, or a test's collector).
    let write: @Sendable (String) -> Void

    package init(
        label: String, clock: any GatewayClock = SystemGatewayClock(),
        write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError
    ) {
        self.label = label
        self.clock = clock
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = metadata.merging(event.metadata ?? [:]) { $1 }
        if let error = event.error { merged["error"] = "\(error)" }
        write(
            Self.line(
                label: label, level: event.level, message: event.message.description, metadata: merged,
                source: event.source, at: clock.now))
    }

    /// One log line, newline included.
    package static func line(
        label: String, level: Logger.Level, message: String, metadata: Logger.Metadata, source: String, at time: Date
    ) -> String {
        var members: [String: JSONValue] = [
            "time": .string(time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
            "level": .string(level.rawValue), "label": .string(label), "message": .string(message),
            "source": .string(source),
        ]
        if !metadata.isEmpty { members["metadata"] = .object(metadata.mapValues(value)) }
        return JSONValue.object(members).compactText + "\n"
    }

    static func value(_ metadata: Logger.Metadata.Value) -> JSONValue {
        switch metadata {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(value))
        case .dictionary(let values): .object(values.mapValues(value))
        }
    }

    /// Writes `line` to standard error in one call.
    package static let standardError: @Sendable (String) -> Void = { line in
        let bytes = Array(line.utf8)
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(2, base + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
