/// Whether the pool carries what its round trip allows while every stream is busy: the measure
/// behind the notice that another connection would send more.
///
/// A request holds its stream from the moment it is written until its answer is read, and the
/// stream then waits for the next request: a stream's cycle. Far from APNs, with every stream
/// busy, the pool sends `streams / cycle` a second, and at best `streams / round trip`. When the
/// server answers late (a busy APNs, a slow path) or the client takes long to refill a freed
/// stream, the cycle grows past the round trip and the connection carries less than its bound,
/// whatever the client does with it; another connection carries the difference (``PoolGrowth``
/// adds one when a slow spell begins; Benchmarks/README.md measures both).
///
/// The loop gives it, once a pass, the answers the pass read, the shortest time from a request's
/// write to its answer among them, how many requests libcurl held and the most it may hold
/// (``pass(answers:fastest:busy:limit:at:)``). Each ``window`` in which the streams were nearly all
/// busy (``fullShare`` of the limit or more, on average) is judged: a stream's cycle is
/// `limit × window / answers` (the time a stream took per request, its time empty on the client
/// included), the round trip the fastest answer of the last ``roundTripWindows`` windows, and a
/// cycle of ``slowFactor`` round trips or more is slow; ``windowsToBegin`` slow windows in a row
/// begin a slow spell (one window alone is often a clump of late answers, or a burst's first round
/// trip, when every stream is busy and none has answered yet). A window with streams to spare (the sender
/// has less to send than the pool carries), or close to APNs (a round trip under
/// ``shortestJudgedRoundTrip``, where a pass of the loop is most of it), ends a slow spell without a
/// judgement.
///
/// Time is an input: every call is given the loop's clock reading, and nothing here reads one.
///
/// Thread safety: none; a value the loop thread alone holds.
struct CycleWatch {
    /// How long one judgement gathers answers.
    static let window: Duration = .seconds(1)
    /// A cycle this many round trips long or longer is slow: the streams then carry at most ten
    /// elevenths of the bound, under the nine tenths a connection far from APNs should carry.
    static let slowFactor = 1.1
    /// The share of the limit that, busy on average over a window, counts as every stream busy:
    /// under a bulk send the loop refills a freed stream from its reserve in the pass that freed
    /// it, but a clump of answers empties the reserve for a few milliseconds, so a pool with all
    /// the work it can carry averages a little under its limit.
    static let fullShare = 0.85
    /// Slow windows in a row that begin a slow spell.
    static let windowsToBegin = 2
    /// The round trip is the shortest answer of this many windows, the current one included.
    static let roundTripWindows = 5
    /// Closer to APNs than this, nothing is judged.
    static let shortestJudgedRoundTrip: Duration = .milliseconds(10)

    /// What a judged window found.
    struct Judgement: Equatable {
        /// Answers a second in the window.
        var rate: Double
        /// The streams busy on average.
        var streams: Double
        /// The most requests libcurl may hold: the pool's streams.
        var limit: Int
        /// The shortest answer of the recent windows.
        var roundTrip: Duration
        /// How long each stream took per request, on average, its time empty included.
        var cycle: Duration

        /// What the pool's streams would carry if each cycle were one round trip, a second.
        var bound: Double { Double(limit) / roundTrip.seconds }
    }

    /// A slow spell began (the first slow window after none) or ended.
    enum Change: Equatable {
        case slow(Judgement)
        case recovered
    }

    /// ``slowFactor`` and ``shortestJudgedRoundTrip``, unless a test gives its own
    /// (``PoolJudgement``).
    private let slowFactor: Double
    private let shortestJudgedRoundTrip: Duration

    init(
        slowFactor: Double = CycleWatch.slowFactor,
        shortestJudgedRoundTrip: Duration = CycleWatch.shortestJudgedRoundTrip
    ) {
        self.slowFactor = slowFactor
        self.shortestJudgedRoundTrip = shortestJudgedRoundTrip
    }

    private var windowStart: ContinuousClock.Instant?
    private var lastSample: ContinuousClock.Instant?
    private var lastBusy = 0
    private var lastLimit = 0
    /// Stream-seconds busy in the window, and its limit-seconds.
    private var busyTime = 0.0
    private var limitTime = 0.0
    private var answers = 0
    private var fastest: Duration?
    /// The shortest answer of each of the last windows, the oldest first.
    private var recentFastest: [Duration] = []
    /// Slow windows in a row, up to the one just judged.
    private var slowInARow = 0
    /// Within a slow spell.
    private(set) var isSlow = false

    /// One pass of the loop at `now`: `answers` read in it, the shortest write-to-answer time among
    /// them (`fastest`), and, from now on, `busy` requests in libcurl of at most `limit`. Returns
    /// the change a window that ends here makes, if any.
    mutating func pass(
        answers: Int, fastest: Duration?, busy: Int, limit: Int, at now: ContinuousClock.Instant
    ) -> Change? {
        guard let start = windowStart, let last = lastSample else {
            windowStart = now
            lastSample = now
            lastBusy = busy
            lastLimit = limit
            return nil
        }
        let elapsed = (now - last).seconds
        busyTime += Double(lastBusy) * elapsed
        limitTime += Double(lastLimit) * elapsed
        lastSample = now
        lastBusy = busy
        lastLimit = limit
        self.answers += answers
        if let fastest { self.fastest = min(self.fastest ?? fastest, fastest) }
        guard now - start >= Self.window else { return nil }
        let change = judge(seconds: (now - start).seconds)
        windowStart = now
        busyTime = 0
        limitTime = 0
        self.answers = 0
        self.fastest = nil
        return change
    }

    /// Ends the window of `seconds`.
    private mutating func judge(seconds: Double) -> Change? {
        if let fastest {
            recentFastest.append(fastest)
            if recentFastest.count > Self.roundTripWindows { recentFastest.removeFirst() }
        }
        var slow: Judgement?
        if let roundTrip = recentFastest.min(), roundTrip >= shortestJudgedRoundTrip, answers > 0,
            limitTime > 0, busyTime >= Self.fullShare * limitTime
        {
            let cycle = Duration.seconds(limitTime / Double(answers))
            if cycle >= roundTrip * slowFactor {
                slow = Judgement(
                    rate: Double(answers) / seconds, streams: busyTime / seconds, limit: Int(limitTime / seconds + 0.5),
                    roundTrip: roundTrip, cycle: cycle)
            }
        }
        slowInARow = slow == nil ? 0 : slowInARow + 1
        switch (slow, isSlow) {
        case (let judgement?, false) where slowInARow >= Self.windowsToBegin:
            isSlow = true
            return .slow(judgement)
        case (nil, true):
            isSlow = false
            return .recovered
        default:
            return nil
        }
    }
}
