/// How many connections the pool carries now: the configured ones
/// (``TransportConfiguration/maximumConnectionsPerHost``), and, while its streams cycle slowly, up
/// to ``TransportConfiguration/additionalConnectionsWhenSlow`` more.
///
/// Far from APNs a connection carries at most its streams per round trip, and less when the
/// server answers late: each stream then waits longer than the round trip for its answer, and
/// nothing the client does on that connection fills the gap. Another connection's streams do. So
/// when a slow spell begins (``CycleWatch``: every stream busy, each taking 1.1 round trips or
/// more per request), the pool adds a connection, if it may; and once the demand (requests in
/// libcurl and waiting for it) has fit one connection fewer for ``Timing/retireAfter``, it takes
/// the added one away again, one at a time, down to the configured pool. After taking one away it
/// adds none for ``Timing/regrowAfter``: Apple asks providers not to open and close connections
/// repeatedly, and a sender whose demand rises and falls every few seconds keeps the pool it has
/// rather than churning one.
///
/// A process too short of CPU to refill its streams cycles slowly too, and another connection
/// does not help it; the judgement cannot tell the two apart (the notice says so), and the cost
/// of the mistake is one connection carrying part of the same load until the demand falls.
///
/// Time is an input: each call is given the loop's clock reading, and nothing here reads one.
///
/// Thread safety: none; a value the loop's ``ConnectionTable`` holds, on the loop thread.
struct PoolGrowth {
    /// When the pool takes an added connection away, and how long it then adds none.
    struct Timing: Sendable, Hashable {
        /// How long the demand must fit one connection fewer before one is taken away.
        var retireAfter: Duration = .seconds(10)
        /// After one is taken away, how long no connection is added.
        var regrowAfter: Duration = .seconds(60)
    }

    /// What the pool does now.
    enum Step: Equatable {
        /// Carry one connection more: `connections` in all.
        case add(connections: Int)
        /// Carry one connection fewer: `connections` in all.
        case retire(connections: Int)
    }

    /// The configured pool, never gone below.
    let base: Int
    /// The most the pool may carry: the configured ones and the additional ones.
    let most: Int
    let timing: Timing
    /// The connections the pool carries now.
    private(set) var connections: Int
    /// Since when the demand has fit one connection fewer, while the pool carries added ones.
    private var fitsSince: ContinuousClock.Instant?
    /// When the pool last took one away.
    private var lastRetired: ContinuousClock.Instant?

    init(base: Int, additional: Int, timing: Timing = Timing()) {
        self.base = max(1, base)
        most = self.base + max(0, additional)
        self.timing = timing
        connections = self.base
    }

    /// A slow spell began at `now`: one connection more, if the pool may carry it and took none
    /// away within ``Timing/regrowAfter``.
    mutating func slowSpellBegan(at now: ContinuousClock.Instant) -> Step? {
        guard connections < most else { return nil }
        if let lastRetired, now - lastRetired < timing.regrowAfter { return nil }
        connections += 1
        fitsSince = nil
        return .add(connections: connections)
    }

    /// A pass at `now` found `demand` requests in libcurl and waiting for it, each connection
    /// carrying at most `streamsPerConnection`: one connection fewer once the demand has fit them
    /// for ``Timing/retireAfter``.
    mutating func pass(demand: Int, streamsPerConnection: Int, at now: ContinuousClock.Instant) -> Step? {
        guard connections > base else { return nil }
        guard demand <= (connections - 1) * streamsPerConnection else {
            fitsSince = nil
            return nil
        }
        let since = fitsSince ?? now
        fitsSince = since
        guard now - since >= timing.retireAfter else { return nil }
        connections -= 1
        lastRetired = now
        fitsSince = nil
        return .retire(connections: connections)
    }
}

/// The thresholds of the pool's judgements (``CycleWatch``, ``PoolGrowth``): their defaults,
/// unless a test shortens them to see a slow spell, an added connection and its retirement within
/// seconds against the mock server (`TransportConfiguration.poolJudgement`).
package struct PoolJudgement: Sendable, Hashable {
    /// A cycle this many round trips long or longer is slow.
    package var slowFactor = CycleWatch.slowFactor
    /// Closer to APNs than this, nothing is judged.
    package var shortestJudgedRoundTrip = CycleWatch.shortestJudgedRoundTrip
    /// How long the demand must fit one connection fewer before an added one goes.
    package var retireAfter = PoolGrowth.Timing().retireAfter
    /// After one goes, how long none is added.
    package var regrowAfter = PoolGrowth.Timing().regrowAfter

    package init() {}

    var cycleWatch: CycleWatch { CycleWatch(slowFactor: slowFactor, shortestJudgedRoundTrip: shortestJudgedRoundTrip) }
    var timing: PoolGrowth.Timing { PoolGrowth.Timing(retireAfter: retireAfter, regrowAfter: regrowAfter) }
}
