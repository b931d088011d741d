import Foundation

/// How long a stream stays empty on the client, as the transport's loop sees it: from the pass
/// that read an answer (its stream freed) to libcurl's writing the next request (on the stream
/// freed longest ago, paired first in first out), in buckets; and, of that, how long from the
/// answer until the loop handed the next request to libcurl (`curl_multi_add_handle`): the rest is
/// libcurl's. The benchmark's far-from-APNs table
/// reads it (`TransportConfiguration.streamIdle`); nothing else measures it, and a connector
/// without one pays nothing.
///
/// Thread safety: `Sendable`; the counts are behind a lock (the loop records, the benchmark reads).
package final class StreamIdleHistogram: Sendable, Hashable {
    /// The buckets' upper edges; the last bucket has none.
    package static let edges: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(20), .milliseconds(50),
    ]
    private let counts = Locked([Int](repeating: 0, count: StreamIdleHistogram.edges.count + 1))
    private let handedCounts = Locked([Int](repeating: 0, count: StreamIdleHistogram.edges.count + 1))
    /// Bumped by ``forgetPending()``: the loop drops the streams it holds as freed.
    private let generation = Locked(0)

    package init() {}

    /// One histogram is equal only to itself (a `TransportConfiguration` compares by it).
    package static func == (lhs: StreamIdleHistogram, rhs: StreamIdleHistogram) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    func record(_ idle: Duration) {
        let bucket = Self.edges.firstIndex { idle <= $0 } ?? Self.edges.count
        counts.withLock { $0[bucket] += 1 }
    }

    func recordHanded(_ wait: Duration) {
        let bucket = Self.edges.firstIndex { wait <= $0 } ?? Self.edges.count
        handedCounts.withLock { $0[bucket] += 1 }
    }

    /// Forgets what was recorded.
    package func reset() {
        counts.withLock { $0 = [Int](repeating: 0, count: $0.count) }
        handedCounts.withLock { $0 = [Int](repeating: 0, count: $0.count) }
        forgetPending()
    }

    /// Before a run: the streams freed so far are not paired with its requests (between two runs
    /// they stayed empty on purpose).
    package func forgetPending() { generation.withLock { $0 += 1 } }

    var currentGeneration: Int { generation.withLock { $0 } }

    /// The recorded idle times as the 50th, 90th and 99th percentiles and the count, then the same
    /// for the wait before the hand-over to libcurl: each percentile as the upper edge of its
    /// bucket, since the buckets are all that is kept.
    package var summary: String {
        Self.describe(counts.withLock { $0 }) + "; handed to libcurl "
            + Self.describe(handedCounts.withLock { $0 })
    }

    private static func describe(_ counts: [Int]) -> String {
        let total = counts.reduce(0, +)
        guard total > 0 else { return "none recorded" }
        func edge(_ quantile: Double) -> String {
            var seen = 0
            for (index, count) in counts.enumerated() {
                seen += count
                if Double(seen) >= quantile * Double(total) {
                    guard index < edges.count else { return "> 50 ms" }
                    let microseconds = edges[index] / .microseconds(1)
                    return microseconds < 1000
                        ? "≤ \(Double(microseconds) / 1000) ms" : "≤ \(Int(microseconds / 1000)) ms"
                }
            }
            return "> 50 ms"
        }
        return "p50 \(edge(0.5)), p90 \(edge(0.9)), p99 \(edge(0.99)) (n \(total))"
    }
}

/// The loop thread's side of a ``StreamIdleHistogram``: when streams freed, waiting to be paired
/// with the requests that fill them.
///
/// Thread safety: not `Sendable`; made by the loop thread when its connector measures, and reached
/// only from it: by the loop when it reads answers and hands requests to libcurl, and by libcurl's
/// pre-request callback through the pass's ``CoalescedWrites`` (which that callback reaches already).
final class StreamIdleProbe {
    let histogram: StreamIdleHistogram
    /// When streams freed that no request has filled yet, oldest first from `head`.
    private var freed: [ContinuousClock.Instant] = []
    private var head = 0
    /// The same streams, for the hand-over to libcurl.
    private var handedHead = 0
    /// The histogram's generation the pending streams belong to.
    private var generation = 0

    init(histogram: StreamIdleHistogram) { self.histogram = histogram }

    /// A stream freed: its answer was read in the pass that ended at `time`.
    func freed(at time: ContinuousClock.Instant) { freed.append(time) }

    /// libcurl is about to write a request: it fills the stream freed longest ago.
    func filled() {
        let current = histogram.currentGeneration
        if current != generation {
            generation = current
            freed.removeAll(keepingCapacity: true)
            head = 0
            handedHead = 0
        }
        guard head < freed.count else { return }  // a stream never used before
        histogram.record(.now - freed[head])
        head += 1
        if head >= 4096, handedHead >= head {
            freed.removeFirst(head)
            handedHead -= head
            head = 0
        }
    }

    /// The loop hands a request to libcurl: it will fill the stream freed longest ago.
    func handed() {
        guard handedHead < freed.count else { return }
        histogram.recordHanded(.now - freed[handedHead])
        handedHead += 1
    }
}
