import APNs
import Foundation

/// The bulk send against a task group of single sends in code shaped as a user's, not as this
/// benchmark's: the tokens arrive as `Data`, as a database column hands
/// them over, and every device is made from a token's bytes inside the timed region — an array of
/// devices made up front for the bulk send with its default in-flight limit, each single send's
/// device made in its own child task, with as many single sends kept going as the connection has
/// streams. Only the library's public API is used.
enum UserStyle {
    /// `count` distinct 32-byte tokens, each its own `Data`.
    static func tokens(_ count: Int) -> [Data] {
        (0..<count).map { index in
            var bytes = [UInt8](repeating: 0x5A, count: 32)
            for byte in 0..<8 { bytes[31 - byte] = UInt8(truncatingIfNeeded: UInt64(index) >> (8 * UInt64(byte))) }
            return Data(bytes)
        }
    }

    /// The bulk send as a user writes it: devices made from the tokens, then one call.
    static func bulk<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, tokens: [Data]
    ) async throws
        -> Workload.Result
    {
        let cpuBefore = Usage.cpuSeconds()
        let start = ContinuousClock.now
        let devices = tokens.compactMap { try? Device(tokenBytes: $0) }
        let summary = try await send(notification, via: connector, to: devices)
        let result = Workload.Result(
            pushes: tokens.count, seconds: (ContinuousClock.now - start).seconds,
            cpuSeconds: Usage.cpuSeconds() - cpuBefore,
            outcomes: summary.total)
        if summary.accepted < tokens.count {
            print("warning: \(tokens.count - summary.accepted) bulk sends were not accepted")
        }
        return result
    }

    /// A throwing task group of single sends, `inFlight` at a time, as a user writes it.
    static func singles<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, tokens: [Data], inFlight: Int
    ) async throws -> Workload.Result {
        let cpuBefore = Usage.cpuSeconds()
        let start = ContinuousClock.now
        var outcomes = 0
        try await withThrowingTaskGroup(of: APNsResponse.self) { group in
            var pending = tokens.makeIterator()
            for _ in 0..<inFlight {
                guard let token = pending.next() else { break }
                group.addTask { try await send(notification, via: connector, to: Device(tokenBytes: token)) }
            }
            while try await group.next() != nil {
                outcomes += 1
                if let token = pending.next() {
                    group.addTask { try await send(notification, via: connector, to: Device(tokenBytes: token)) }
                }
            }
        }
        return Workload.Result(
            pushes: tokens.count, seconds: (ContinuousClock.now - start).seconds,
            cpuSeconds: Usage.cpuSeconds() - cpuBefore,
            outcomes: outcomes)
    }

    /// `rounds` alternating pairs (bulk, then singles) over `count` tokens in all; the rows of the
    /// comparison, the ratio being the median of the per-round ratios.
    static func compare<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, count: Int, rounds: Int, inFlight: Int
    ) async throws -> [(String, String)] {
        let rounds = max(1, min(rounds, count / 100))
        let tokens = tokens(count / rounds)
        // Connect and settle the token.
        _ = try await bulk(notification, via: connector, tokens: Array(tokens.prefix(1000)))
        var bulkTotal = Workload.Result()
        var singlesTotal = Workload.Result()
        var ratios: [Double] = []
        for _ in 0..<rounds {
            let bulkRound = try await bulk(notification, via: connector, tokens: tokens)
            let singleRound = try await singles(notification, via: connector, tokens: tokens, inFlight: inFlight)
            bulkTotal.add(bulkRound)
            singlesTotal.add(singleRound)
            if singleRound.rate > 0 { ratios.append(bulkRound.rate / singleRound.rate) }
        }
        return [
            ("user-style harness (Data tokens): bulk send pushes/s", Format.rate(bulkTotal.rate)),
            (
                "user-style harness: throwing task group of \(inFlight) single sends, pushes/s",
                Format.rate(singlesTotal.rate)
            ),
            (
                "user-style harness: ratio bulk / single sends, pushes/s (median of \(ratios.count) per-round ratios; target >= 1.2)",
                Format.ratio(Serialization.median(ratios))
            ),
            (
                "user-style harness: ratio bulk / single sends, CPU per push",
                Format.ratio(bulkTotal.cpuPer100k / singlesTotal.cpuPer100k)
            ),
        ]
    }
}
