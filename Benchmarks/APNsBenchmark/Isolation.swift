import APNs
import Foundation

/// The same bulk send read from the main actor and from nonisolated code: an `onOutcome` closure
/// that counts, and a `for try await` loop over ``bulkSendOutcomes(_:via:to:)`` that counts, each
/// written once in a `@MainActor` function (as a command line tool's `main.swift` or any
/// `@MainActor` service is) and once in a nonisolated one. Where outcomes cost an actor hop each,
/// the main actor's rows fall behind; the ratios say by how much, in one run.
enum Isolation {
    /// The four ways to read the outcomes.
    enum Reader: CaseIterable {
        case eagerOnMainActor, eagerNonisolated, sequenceOnMainActor, sequenceNonisolated
    }

    @MainActor
    static func eagerOnMainActor<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, devices: Int
    ) async throws -> Int {
        var accepted = 0
        try await send(notification, via: connector, to: Workload.Devices(count: devices)) { outcome in
            if outcome.isAccepted { accepted += 1 }
        }
        return accepted
    }

    nonisolated static func eagerNonisolated<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, devices: Int
    ) async throws -> Int {
        var accepted = 0
        try await send(notification, via: connector, to: Workload.Devices(count: devices)) { outcome in
            if outcome.isAccepted { accepted += 1 }
        }
        return accepted
    }

    @MainActor
    static func sequenceOnMainActor<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, devices: Int
    ) async throws -> Int {
        var accepted = 0
        for try await outcome in try bulkSendOutcomes(
            notification, via: connector, to: Workload.Devices(count: devices))
        where outcome.isAccepted {
            accepted += 1
        }
        return accepted
    }

    nonisolated static func sequenceNonisolated<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, devices: Int
    ) async throws -> Int {
        var accepted = 0
        for try await outcome in try bulkSendOutcomes(
            notification, via: connector, to: Workload.Devices(count: devices))
        where outcome.isAccepted {
            accepted += 1
        }
        return accepted
    }

    static func run<Notification: TokenDeliverable>(
        _ reader: Reader, _ notification: Notification, via connector: TokenConnector, devices: Int
    ) async throws -> Workload.Result {
        let cpuBefore = Usage.cpuSeconds()
        let start = ContinuousClock.now
        let accepted: Int
        switch reader {
        case .eagerOnMainActor: accepted = try await eagerOnMainActor(notification, via: connector, devices: devices)
        case .eagerNonisolated: accepted = try await eagerNonisolated(notification, via: connector, devices: devices)
        case .sequenceOnMainActor:
            accepted = try await sequenceOnMainActor(notification, via: connector, devices: devices)
        case .sequenceNonisolated:
            accepted = try await sequenceNonisolated(notification, via: connector, devices: devices)
        }
        let result = Workload.Result(
            pushes: devices, seconds: (ContinuousClock.now - start).seconds,
            cpuSeconds: Usage.cpuSeconds() - cpuBefore, outcomes: accepted)
        if accepted < devices { print("warning: \(devices - accepted) sends were not accepted") }
        return result
    }

    /// `rounds` rounds over `count` pushes in all, each round running the four readers one after
    /// another (in a rotated order, so none always runs first); the rows, with the ratios main actor
    /// / nonisolated as medians of the per-round ratios.
    static func compare<Notification: TokenDeliverable>(
        _ notification: Notification, via connector: TokenConnector, count: Int, rounds: Int
    ) async throws -> [(String, String)] {
        let rounds = max(1, min(rounds, count / 100))
        let share = count / rounds
        _ = try await run(.eagerNonisolated, notification, via: connector, devices: 1_000)  // connect, settle the token
        var totals: [Reader: Workload.Result] = [:]
        var rateRatios: (eager: [Double], sequence: [Double]) = ([], [])
        var cpuRatios: (eager: [Double], sequence: [Double]) = ([], [])
        for round in 0..<rounds {
            var results: [Reader: Workload.Result] = [:]
            let readers = Reader.allCases
            for index in readers.indices {
                let reader = readers[(index + round) % readers.count]
                let result = try await run(reader, notification, via: connector, devices: share)
                results[reader] = result
                totals[reader, default: Workload.Result()].add(result)
            }
            func ratios(_ main: Reader, _ other: Reader) -> (rate: Double, cpu: Double)? {
                guard let main = results[main], let other = results[other], other.rate > 0, other.cpuPer100k > 0
                else { return nil }
                return (main.rate / other.rate, main.cpuPer100k / other.cpuPer100k)
            }
            if let (rate, cpu) = ratios(.eagerOnMainActor, .eagerNonisolated) {
                rateRatios.eager.append(rate)
                cpuRatios.eager.append(cpu)
            }
            if let (rate, cpu) = ratios(.sequenceOnMainActor, .sequenceNonisolated) {
                rateRatios.sequence.append(rate)
                cpuRatios.sequence.append(cpu)
            }
        }
        let names: [Reader: String] = [
            .eagerOnMainActor: "bulk send, onOutcome on the main actor",
            .eagerNonisolated: "bulk send, onOutcome nonisolated",
            .sequenceOnMainActor: "for try await over bulkSendOutcomes on the main actor",
            .sequenceNonisolated: "for try await over bulkSendOutcomes, nonisolated",
        ]
        var rows: [(String, String)] = []
        for reader in Reader.allCases {
            let total = totals[reader] ?? Workload.Result()
            let name = names[reader] ?? ""
            rows.append(("\(name): pushes/s", Format.rate(total.rate)))
            rows.append(("\(name): CPU s per 100k", Format.seconds(total.cpuPer100k)))
        }
        rows.append(
            (
                "ratio main actor / nonisolated, bulk send: pushes/s (median of \(rateRatios.eager.count) rounds; target >= 0.9)",
                Format.ratio(Serialization.median(rateRatios.eager))
            ))
        rows.append(
            (
                "ratio main actor / nonisolated, bulk send: CPU per push (target <= 1.1)",
                Format.ratio(Serialization.median(cpuRatios.eager))
            ))
        rows.append(
            (
                "ratio main actor / nonisolated, for try await: pushes/s (target >= 0.9)",
                Format.ratio(Serialization.median(rateRatios.sequence))
            ))
        rows.append(
            (
                "ratio main actor / nonisolated, for try await: CPU per push (target <= 1.1)",
                Format.ratio(Serialization.median(cpuRatios.sequence))
            ))
        return rows
    }
}
