import APNs
import APNsMockServer
import Foundation

/// Throughput where the round trip is the limit, as it is 20–150 ms from APNs: a server in its own
/// process that answers each request `rtt` after it arrived — the mock (its `delay` fault) or
/// nginx (``NginxDelayServer``, fast enough that at 1,000 streams the client, not the server, is
/// measured) — and the bulk send at each pool size and stream count, against the bound the protocol
/// allows, min(connections × streams / RTT, the same pool's rate against the same server with no
/// delay), with the C loop at the same settings (one connection: it opens no more). The bulk sends
/// take their default in flight, as a user's call does: the connector's streams and a reserve.
enum FarFromAPNs {
    struct Point {
        var rtt: Int  // milliseconds
        var connections: Int
        var streams: Int
        var bound: Double
        var ours = Workload.Result()
        var floor: Workload.Result?
        /// nghttp2's h2load at the same settings, when installed: an independent client.
        var h2load: Workload.Result?
        var connectionsOpened = 0
        /// The bulk send at the same connections and streams against the same server with no delay.
        var zero: Workload.Result
    }

    /// `launch` starts the server answering after the given milliseconds (0: at once).
    static func measure(
        _ notification: AlertNotification<Workload.Game>, key: MockCertificateAuthority.SigningKey, rtts: [Int],
        connections: [Int], streams: [Int], pushes: Int, request: APNsRequest, token: String, h2load: String?,
        launch: (_ delayMilliseconds: Int) throws -> MockServerProcess
    ) async throws -> [Point] {
        var points: [Point] = []
        // Each point's reference is the same pool with no delay: 100 streams are not 1,000.
        var zeros: [[Int]: Workload.Result] = [:]
        do {
            let server = try launch(0)
            defer { server.stop() }
            for size in connections {
                for perConnection in streams {
                    let connector = try server.connector(key: key, streams: perConnection, connections: size)
                    try await Workload.warmUp(notification, via: connector, inFlight: size * perConnection)
                    zeros[[size, perConnection]] = try await Workload.run(
                        notification, via: connector, devices: max(pushes, size * perConnection * 8),
                        inFlight: nil)
                    await connector.shutdown()
                }
            }
        }
        for rtt in rtts {
            let server = try launch(rtt)
            defer { server.stop() }
            for size in connections {
                for perConnection in streams {
                    let zero = zeros[[size, perConnection]] ?? Workload.Result()
                    let bound = min(Double(size * perConnection) / (Double(rtt) / 1000), zero.rate)
                    // Long enough to reach a steady state (at least 8 round trips of full windows),
                    // short enough that the slow corners do not take minutes.
                    let count = max(size * perConnection * 8, min(pushes, Int(bound * 6)))
                    var point = Point(rtt: rtt, connections: size, streams: perConnection, bound: bound, zero: zero)
                    let connector = try server.connector(key: key, streams: perConnection, connections: size)
                    try await send(
                        notification, via: connector, to: Workload.Devices(count: size * perConnection * 2),
                        maximumInFlight: size * perConnection)
                    point.ours = try await Workload.run(
                        notification, via: connector, devices: count, inFlight: nil)
                    point.connectionsOpened = connector.connectionsOpened
                    await connector.shutdown()
                    if size == 1 {
                        point.floor = try LibcurlReference.run(
                            port: server.port, caPath: server.caPath, count: count, streams: perConnection,
                            token: token,
                            request: request, coalesce: false)
                        if let h2load {
                            point.h2load = try H2Load.run(
                                h2load, port: server.port, count: count, streams: perConnection, token: token,
                                request: request)
                        }
                    }
                    points.append(point)
                    print(
                        "far: \(rtt) ms, \(size) × \(perConnection): \(Format.rate(point.ours.rate))/s of \(Format.rate(bound))"
                    )
                }
            }
        }
        return points
    }

    static func rows(_ points: [Point]) -> [(String, String)] {
        var rows: [(String, String)] = [
            (
                "far from APNs: RTT, connections × streams",
                "pushes/s; of the bound; CPU per push vs zero delay; C loop of the bound; CPU per push vs the C loop; h2load of the bound"
            )
        ]
        for point in points {
            var cells = [
                Format.rate(point.ours.rate),
                Format.ratio(point.ours.rate / point.bound),
                Format.ratio(point.ours.cpuPer100k / point.zero.cpuPer100k),
            ]
            cells.append(point.floor.map { Format.ratio($0.rate / point.bound) } ?? "-")
            cells.append(point.floor.map { Format.ratio(point.ours.cpuPer100k / $0.cpuPer100k) } ?? "-")
            cells.append(point.h2load.map { Format.ratio($0.rate / point.bound) } ?? "-")
            rows.append(
                (
                    "  \(point.rtt) ms, \(point.connections) × \(point.streams) (bound \(Format.rate(point.bound))/s, zero delay \(Format.rate(point.zero.rate))/s)",
                    cells.joined(separator: "; ")
                ))
        }
        return rows
    }
}
