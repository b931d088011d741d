@_spi(RawRequests) import APNs
import ArgumentParser
import Foundation

/// `apns send --tokens-file`: one request to many devices through the library's bulk path, with a
/// progress bar on a terminal (plain periodic lines otherwise, nothing under `--json`) and a
/// summary at the end.
struct BulkDelivery {
    let template: APNsRequest
    let devices: [Device]
    let connector: AnyConnector
    let timeout: Duration?
    let retry: RetryPolicy
    let maximumInFlight: Int?
    let json: Bool
    /// Where to write the devices APNs answered 410 Unregistered for: CSV for a `.csv` name, JSON
    /// lines otherwise.
    let unregisteredOut: String?

    /// Reads device tokens, one hex token a line (blank lines and `#` comments skipped), from a
    /// file or, for `-`, standard input. Every line is checked before anything is sent.
    static func readTokens(from path: String) throws -> [Device] {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read --tokens-file \(path)")
            }
            data = contents
        }
        var devices: [Device] = []
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty || text.hasPrefix("#") { continue }
            do {
                devices.append(try Device(token: text))
            } catch {
                throw UsageError("--tokens-file \(path) line \(lineNumber): \(error.description)")
            }
        }
        guard !devices.isEmpty else { throw UsageError("--tokens-file \(path) has no device tokens") }
        return devices
    }

    /// Sends, reports, and returns the exit code: 0 when every device was accepted.
    func run() async throws -> ExitCode {
        let results = try bulkSendOutcomes(
            request: template, via: connector, to: devices, maximumInFlight: maximumInFlight, timeout: timeout,
            retry: retry)
        var tally = Tally(total: devices.count)
        let progress = json ? nil : Progress(total: devices.count)
        let start = ContinuousClock.now
        for try await outcome in results {
            tally.count(outcome)
            if json {
                print(Output.jsonLine(target: outcome.device.token, isChannel: false, result: outcome.result))
            } else {
                switch outcome.result {
                case .success: break
                case .failure(.rejected(let rejection)):
                    progress?.print("\(outcome.device.token) \(rejection.status) \(rejection.reason?.rawValue ?? "-")")
                case .failure(let error):
                    progress?.print("\(outcome.device.token) error \(Failure.describe(error).0)")
                }
                progress?.update(done: tally.done, elapsed: ContinuousClock.now - start)
            }
        }
        let elapsed = ContinuousClock.now - start
        progress?.finish(done: tally.done, elapsed: elapsed)
        if let unregisteredOut { try BulkDelivery.write(tally.tokensToForget.unregistered, to: unregisteredOut) }
        if !json {
            print(tally.summary(elapsed: elapsed))
        } else if let cause = tally.counts.likelyCause {
            FileHandle.standardError.write(Data("apns: \(cause)\n".utf8))
        }
        return tally.exitCode
    }

    /// Writes `--unregistered-out`: `token,timestamp` CSV (APNs' timestamp in milliseconds since
    /// 1970, empty when it sent none) for a `.csv` name, else one JSON object a line.
    static func write(_ unregistered: [TokensToForget.Unregistered], to path: String) throws {
        let csv = path.lowercased().hasSuffix(".csv")
        var text = csv ? "token,timestamp\n" : ""
        for entry in unregistered {
            let milliseconds = entry.invalidSince.map { String(Int64(($0.timeIntervalSince1970 * 1000).rounded())) }
            if csv {
                text += entry.device.token + "," + (milliseconds ?? "") + "\n"
            } else {
                text += #"{"token":""# + entry.device.token + #"","timestamp":"# + (milliseconds ?? "null") + "}\n"
            }
        }
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw UsageError("cannot write --unregistered-out \(path): \(error.localizedDescription)")
        }
    }

    /// Outcomes counted for the summary and the exit code.
    struct Tally {
        let total: Int
        var done = 0
        var delivered = 0
        var rejected: [String: Int] = [:]
        var failed: [String: Int] = [:]
        var deliveryUnknown = 0
        var latencies: [Duration] = []
        var exitCode: ExitCode = .success
        var tokensToForget = TokensToForget()
        /// The library's own count, for the one cause most outcomes may share.
        var counts = BulkSendSummary()

        init(total: Int) {
            self.total = total
            latencies.reserveCapacity(total)
        }

        mutating func count(_ outcome: BulkOutcome) {
            done += 1
            latencies.append(outcome.duration)
            tokensToForget.collect(outcome)
            counts.count(outcome, collectingTokens: false)
            switch outcome.result {
            case .success:
                delivered += 1
            case .failure(.rejected(let rejection)):
                rejected[rejection.reason?.rawValue ?? "HTTP \(rejection.status)", default: 0] += 1
                if exitCode == .success { exitCode = Failure.rejected }
            case .failure(let error):
                if case .transport(let failure) = error {
                    failed[failure.kind.rawValue, default: 0] += 1
                    if failure.delivery == .unknown { deliveryUnknown += 1 }
                } else {
                    failed["other", default: 0] += 1
                }
                exitCode = Failure.describe(error).1
            }
        }

        /// sent, `N delivered`, rejected by reason, failed by kind, p50/p99 latency, elapsed.
        func summary(elapsed: Duration) -> String {
            let seconds = elapsed / .seconds(1)
            let rate = seconds > 0 ? Double(done) / seconds : 0
            var lines = ["sent \(done) of \(total) in \(String(format: "%.2f", seconds)) s (\(Int(rate.rounded()))/s)"]
            lines.append("\(delivered) delivered")
            let rejectedCount = rejected.values.reduce(0, +)
            lines.append("\(rejectedCount) rejected" + Tally.breakdown(rejected))
            let failedCount = failed.values.reduce(0, +)
            lines.append(
                "\(failedCount) failed" + Tally.breakdown(failed)
                    + (failedCount > 0 ? ", \(deliveryUnknown) of them may have been delivered" : ""))
            let sorted = latencies.sorted()
            lines.append(
                "latency p50 \(Tally.milliseconds(Tally.percentile(sorted, 0.50))), p99 \(Tally.milliseconds(Tally.percentile(sorted, 0.99)))"
            )
            lines.append("elapsed \(String(format: "%.2f", seconds)) s")
            if let cause = counts.likelyCause { lines.append(cause) }
            return lines.joined(separator: "\n")
        }

        static func breakdown(_ counts: [String: Int]) -> String {
            guard !counts.isEmpty else { return "" }
            let parts = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map {
                "\($0.key) \($0.value)"
            }
            return " (" + parts.joined(separator: ", ") + ")"
        }

        /// The nearest-rank percentile of sorted values.
        static func percentile(_ sorted: [Duration], _ fraction: Double) -> Duration? {
            guard !sorted.isEmpty else { return nil }
            let rank = Int((fraction * Double(sorted.count)).rounded(.up))
            return sorted[min(sorted.count, max(1, rank)) - 1]
        }

        static func milliseconds(_ duration: Duration?) -> String {
            guard let duration else { return "-" }
            return String(format: "%.1f ms", duration / .milliseconds(1))
        }
    }

    /// The progress display on standard error: a redrawn bar with rate and ETA on a terminal, a
    /// plain line every few seconds otherwise.
    final class Progress {
        let total: Int
        let isTerminal = isatty(STDERR_FILENO) == 1
        /// A terminal gets the bar at once; a log gets its first line after one interval.
        private lazy var lastDraw = isTerminal ? ContinuousClock.now - .seconds(10) : ContinuousClock.now
        private var drawn = false
        /// How often the display changes: 10 times a second on a terminal, every 2 s in a log.
        var interval: Duration { isTerminal ? .milliseconds(100) : .seconds(2) }

        init(total: Int) { self.total = total }

        func update(done: Int, elapsed: Duration) {
            let now = ContinuousClock.now
            guard now - lastDraw >= interval, done < total else { return }
            lastDraw = now
            draw(done: done, elapsed: elapsed)
        }

        func finish(done: Int, elapsed: Duration) {
            draw(done: done, elapsed: elapsed)
            if isTerminal { write("\n") }
        }

        /// A result line on standard output (a rejection or a failure), above the bar.
        func print(_ line: String) {
            if isTerminal && drawn { write("\r\u{1B}[2K") }
            Swift.print(line)
            fflush(nil)
            drawn = false
        }

        private func draw(done: Int, elapsed: Duration) {
            let seconds = elapsed / .seconds(1)
            let rate = seconds > 0 ? Double(done) / seconds : 0
            let eta = rate > 0 ? Double(total - done) / rate : 0
            let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
            let figures =
                "\(done)/\(total) \(String(format: "%3.0f", percent))% \(Int(rate.rounded()))/s ETA \(String(format: "%.0f", eta)) s"
            if isTerminal {
                let width = 30
                let filled = total > 0 ? min(width, done * width / total) : width
                let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
                write("\r\u{1B}[2K[\(bar)] \(figures)")
                drawn = true
            } else {
                write("progress \(figures)\n")
            }
        }

        private func write(_ text: String) {
            FileHandle.standardError.write(Data(text.utf8))
        }
    }
}
