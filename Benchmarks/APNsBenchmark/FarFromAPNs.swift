import APNs
import APNsMockServer
import Foundation

/// Throughput where the round trip is the limit, as it is 20–150 ms from APNs: a server in its own
/// process that answers each request `rtt` after it arrived — the mock (its `delay` fault), nginx
/// (``NginxDelayServer``, fast enough that at 1,000 streams the client, not the server, is
/// measured) or SwiftNIO's (``NIODelayServer``) — and the bulk send at each pool size and stream
/// count, against the bound the protocol allows: min(connections × streams / RTT, the same pool's
/// rate against the same kind of server with no delay). The C loop runs at the same settings (one
/// connection: it opens no more). The bulk sends take their default in flight, as a user's call
/// does: the connector's streams and a reserve.
///
/// The zero-delay rate moves by a quarter between runs on two shared cores, and at 20 or 50 ms it
/// is the bound, so each point runs in rounds: a zero-delay run, then the delayed run and the C
/// loop, each round judged against its own zero-delay rate; a point's ratios are the medians of its
/// rounds'.
///
/// Every rate here is a steady state's: each run sends ``warmup`` more pushes first and its clocks
/// start at that outcome, the C loop's (`libcurl_reference_run`) as the bulk sends'. The first
/// round trip, in which no client can have an answer, is not the client's to win back.
enum FarFromAPNs {
    /// Outcomes before a run's clocks start.
    static let warmup = 100

    struct Point {
        var rtt: Int  // milliseconds
        var connections: Int
        var streams: Int
        /// Each round's bound.
        var bounds: [Double] = []
        var ours = Workload.Result()
        /// Each round's rate over its bound.
        var ratios: [Double] = []
        /// Each round's rate from the send's start (the first round trip included) over its bound
        /// measured the same way: what a run of this length delivers.
        var wholeRatios: [Double] = []
        var floor: Workload.Result?
        var floorRatios: [Double] = []
        /// nghttp2's h2load at the same settings, when installed: an independent client.
        var h2load: Workload.Result?
        var connectionsOpened = 0
        /// Slow spells the delayed runs' connector noticed (every stream busy, each cycle at least
        /// 1.2 round trips: ``CycleWatch``), which it logs as a notice.
        var slowCycles = 0
        /// Connections the delayed runs' connector added while slow (`--far-additional`).
        var connectionsAdded = 0
        /// The bulk send at the same connections and streams against a server with no delay.
        var zero = Workload.Result()
        /// How long the delayed runs' streams stayed empty on the client, from the loop's own
        /// events (``StreamIdleHistogram``).
        var streamIdle = ""

        var bound: Double { Serialization.median(bounds) }
    }

    /// `launch` starts the server answering after the given milliseconds (0: at once).
    static func measure(
        _ notification: AlertNotification<Workload.Game>, key: MockCertificateAuthority.SigningKey, rtts: [Int],
        connections: [Int], streams: [Int], pushes: Int, rounds: Int, inFlight: Int? = nil, additional: Int = 0,
        request: APNsRequest,
        token: String,
        h2load: String?, launch: (_ delayMilliseconds: Int) throws -> MockServerProcess
    ) async throws -> [Point] {
        var points: [Point] = []
        let rounds = max(1, rounds)
        let zeroServer = try launch(0)
        defer { zeroServer.stop() }
        for rtt in rtts {
            let server = try launch(rtt)
            defer { server.stop() }
            for size in connections {
                for perConnection in streams {
                    let protocolBound = Double(size * perConnection) / (Double(rtt) / 1000)
                    // Long enough to reach a steady state (at least 8 round trips of full windows),
                    // short enough that the slow corners do not take minutes.
                    let count = max(size * perConnection * 8, min(pushes, Int(protocolBound * 6)))
                    let share = max(size * perConnection * 8, count / rounds)
                    var point = Point(rtt: rtt, connections: size, streams: perConnection)
                    let zeroConnector = try zeroServer.connector(key: key, streams: perConnection, connections: size)
                    let idle = StreamIdleHistogram()
                    let connector = try server.connector(
                        key: key, streams: perConnection, connections: size, streamIdle: idle, additional: additional)
                    try await Workload.warmUp(notification, via: zeroConnector, inFlight: size * perConnection)
                    try await send(
                        notification, via: connector, to: Workload.Devices(count: size * perConnection * 2),
                        maximumInFlight: size * perConnection)
                    var floor = Workload.Result()
                    idle.reset()
                    for _ in 0..<rounds {
                        let zero = try await Workload.run(
                            notification, via: zeroConnector, devices: share, inFlight: nil, warmup: warmup)
                        let bound = min(protocolBound, zero.rate)
                        idle.forgetPending()
                        let ours = try await Workload.run(
                            notification, via: connector, devices: share, inFlight: inFlight, warmup: warmup)
                        point.zero.add(zero)
                        point.ours.add(ours)
                        point.bounds.append(bound)
                        point.ratios.append(ours.rate / bound)
                        point.wholeRatios.append(ours.wholeRate / min(protocolBound, zero.wholeRate))
                        if size == 1 {
                            let round = try LibcurlReference.run(
                                port: server.port, caPath: server.caPath, count: share, streams: perConnection,
                                token: token, request: request, coalesce: false)
                            floor.add(round)
                            point.floorRatios.append(round.rate / bound)
                        }
                    }
                    if size == 1 { point.floor = floor }
                    point.streamIdle = idle.summary
                    point.connectionsOpened = connector.connectionsOpened
                    point.slowCycles = connector.slowCycles
                    point.connectionsAdded = connector.connectionsAdded
                    await connector.shutdown()
                    await zeroConnector.shutdown()
                    if size == 1, let h2load {
                        point.h2load = try H2Load.run(
                            h2load, port: server.port, count: count, streams: perConnection, token: token,
                            request: request)
                    }
                    points.append(point)
                    print(
                        "far: \(rtt) ms, \(size) × \(perConnection): \(Format.rate(point.ours.rate))/s, rounds of the bound \(point.ratios.map(Format.ratio).joined(separator: ", ")) (whole runs \(point.wholeRatios.map(Format.ratio).joined(separator: ", "))), connections opened \(point.connectionsOpened), slow spells noticed \(point.slowCycles), connections added \(point.connectionsAdded); a stream empty on the client: \(point.streamIdle)"
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
                "pushes/s; of the bound (median of rounds); whole runs of the bound; CPU per push vs zero delay; C loop of the bound (median of rounds); CPU per push vs the C loop; h2load of the bound (whole run); a stream empty on the client, answer read to next request written"
            )
        ]
        for point in points {
            var cells = [
                Format.rate(point.ours.rate),
                Format.ratio(Serialization.median(point.ratios)),
                Format.ratio(Serialization.median(point.wholeRatios)),
                Format.ratio(point.ours.cpuPer100k / point.zero.cpuPer100k),
            ]
            cells.append(point.floor.map { _ in Format.ratio(Serialization.median(point.floorRatios)) } ?? "-")
            cells.append(point.floor.map { Format.ratio(point.ours.cpuPer100k / $0.cpuPer100k) } ?? "-")
            cells.append(point.h2load.map { Format.ratio($0.rate / point.bound) } ?? "-")
            cells.append(point.streamIdle)
            rows.append(
                (
                    "  \(point.rtt) ms, \(point.connections) × \(point.streams) (bound \(Format.rate(point.bound))/s, zero delay \(Format.rate(point.zero.rate))/s)",
                    cells.joined(separator: "; ")
                ))
        }
        return rows
    }
}
