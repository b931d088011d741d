import APNs
import Foundation

/// Serialising the benchmark alert: swift-apns' writer against JSONEncoder with `.sortedKeys` (the
/// usual way to get deterministic bytes from Foundation) on an equivalent Codable value.
enum Serialization {
    struct Equivalent: Encodable {
        struct APS: Encodable {
            struct AlertBody: Encodable { var title: String; var subtitle: String; var body: String }
            var alert: AlertBody
            var badge: Int
            var sound: String
            var category: String
        }
        var aps: APS
        var gameID: String
        var round: Int
    }

    /// Nanoseconds per notification for each encoder, and their ratio.
    ///
    /// The two are timed in alternating rounds (20 by default), so a burst of noise from the rest
    /// of the machine hits both; each figure is the median over the rounds, and the ratio is the
    /// median of the rounds' ratios.
    static func measure(iterations: Int, rounds: Int = 20) -> (ours: Double, jsonEncoder: Double, ratio: Double) {
        let notification = Workload.notification()
        let equivalent = Equivalent(
            aps: .init(
                alert: .init(
                    title: "Game Request", subtitle: "Five Card Draw",
                    body: "Bob wants to play poker with you and two friends tonight"),
                badge: 1, sound: "default", category: "GAME_INVITATION"),
            gameID: "12345678", round: 3)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let perRound = max(1, iterations / rounds)
        var sink = 0
        func time(_ body: () -> Int) -> Double {
            let start = ContinuousClock.now
            for _ in 0..<perRound { sink &+= body() }
            return (ContinuousClock.now - start).seconds * 1e9 / Double(perRound)
        }
        let ourBody = { (try? notification.payload().count) ?? 0 }
        let referenceBody = { (try? encoder.encode(equivalent).count) ?? 0 }
        for _ in 0..<min(1000, iterations) { sink &+= ourBody() &+ referenceBody() }  // warm up
        var ours: [Double] = []
        var reference: [Double] = []
        var ratios: [Double] = []
        for _ in 0..<rounds {
            let a = time(ourBody)
            let b = time(referenceBody)
            ours.append(a)
            reference.append(b)
            ratios.append(b / a)
        }
        if sink == 42 { print("") }  // keep the results alive
        return (median(ours), median(reference), median(ratios))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
