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

    static func measure(iterations: Int) -> (ours: Double, jsonEncoder: Double) {
        let notification = Workload.notification()
        let equivalent = Equivalent(
            aps: .init(alert: .init(title: "Game Request", subtitle: "Five Card Draw", body: "Bob wants to play poker with you and two friends tonight"),
                       badge: 1, sound: "default", category: "GAME_INVITATION"),
            gameID: "12345678", round: 3)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var sink = 0
        func time(_ body: () -> Int) -> Double {
            for _ in 0..<min(1000, iterations) { sink &+= body() }  // warm up
            let start = ContinuousClock.now
            for _ in 0..<iterations { sink &+= body() }
            return (ContinuousClock.now - start).seconds * 1e9 / Double(iterations)
        }
        let ours = time { (try? notification.payload().count) ?? 0 }
        let reference = time { (try? encoder.encode(equivalent).count) ?? 0 }
        if sink == 42 { print("") }  // keep the results alive
        return (ours, reference)
    }
}
