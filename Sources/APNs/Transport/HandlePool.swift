/// The loop's easy handles: the transfers in libcurl by their handle, the finished handles kept
/// configured for the next transfer, what the loop keeps for each handle (``CurlMultiLoop/EasyState``),
/// and the most that were in use at once since the idle ones were last trimmed.
///
/// It owns those fields and takes the loop's events — a handle made, a transfer started on one
/// or ended, a handle kept or freed — and answers which idle handles to free
/// (``excessIdle(at:)``). The loop makes the libcurl calls (`curl_easy_init`, `curl_easy_cleanup`,
/// adding and removing handles). `LoopOwnersTests` checks it without libcurl.
///
/// Thread safety: none; the loop thread alone uses it. Its stored properties are
/// `@exclusivity(unchecked)` for the reason the loop's are: one thread, and no access overlaps
/// another (a transfer's start and end touch them once each per push).
final class HandlePool {
    /// The transfers in libcurl, by easy handle.
    @exclusivity(unchecked) private(set) var active: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Finished handles, still configured, oldest first.
    @exclusivity(unchecked) private var idle: [UnsafeMutableRawPointer] = []
    /// What the loop keeps for each handle that exists (in libcurl or idle).
    @exclusivity(unchecked) private var states: [UnsafeMutableRawPointer: CurlMultiLoop.EasyState] = [:]
    /// The most transfers in libcurl at once since the idle handles were last trimmed.
    @exclusivity(unchecked) private var peakActive = 0
    private let trim: CurlMultiLoop.Periodic

    /// The most idle handles kept: past it a finished handle is freed at once.
    static let maximumIdle = 4096
    /// How often idle handles beyond the recent need are freed (``excessIdle(at:)``).
    static let trimInterval: Duration = .seconds(30)

    init(startingAt start: ContinuousClock.Instant) {
        trim = CurlMultiLoop.Periodic(every: HandlePool.trimInterval, startingAt: start)
    }

    /// No transfer is in libcurl.
    var isEmpty: Bool { active.isEmpty }
    /// Transfers in libcurl.
    var count: Int { active.count }
    /// The transfers in libcurl.
    var transfers: Dictionary<UnsafeMutableRawPointer, Transfer>.Values { active.values }
    /// Handles kept idle.
    var idleCount: Int { idle.count }

    /// The transfer in libcurl on `easy`, if any.
    func transfer(on easy: UnsafeMutableRawPointer) -> Transfer? { active[easy] }

    /// What the loop keeps for `easy`.
    func state(of easy: UnsafeMutableRawPointer) -> CurlMultiLoop.EasyState? { states[easy] }

    /// The most recently finished idle handle, taken for a transfer; nil when none is idle.
    func takeIdle() -> UnsafeMutableRawPointer? { idle.popLast() }

    /// The loop made `easy`, keeping `state` for it.
    func made(_ easy: UnsafeMutableRawPointer, state: CurlMultiLoop.EasyState) { states[easy] = state }

    /// `transfer` went into libcurl on `easy`.
    func started(_ transfer: Transfer, on easy: UnsafeMutableRawPointer) {
        active[easy] = transfer
        if active.count > peakActive { peakActive = active.count }
    }

    /// The transfer on `easy` left libcurl (finished, cancelled, or taken out): returns it, or nil
    /// when none was there.
    func ended(_ easy: UnsafeMutableRawPointer) -> Transfer? { active.removeValue(forKey: easy) }

    /// Keeps the finished handle `easy` for the next transfer: false when enough are idle already
    /// (the loop frees it).
    func keep(_ easy: UnsafeMutableRawPointer) -> Bool {
        guard idle.count < Self.maximumIdle else { return false }
        idle.append(easy)
        return true
    }

    /// The loop freed `easy`.
    func freed(_ easy: UnsafeMutableRawPointer) { states.removeValue(forKey: easy) }

    /// The idle handles beyond the most in use at once in the last ``trimInterval``, oldest first,
    /// taken off the idle list for the loop to free; checked once per interval (`now`). A burst (a
    /// bulk send with thousands in flight, or transfers libcurl held past a fault) would otherwise
    /// keep its handles, each with its buffers, for the life of the connector.
    func excessIdle(at now: ContinuousClock.Instant) -> [UnsafeMutableRawPointer] {
        guard trim.isDue(at: now) else { return [] }
        defer { peakActive = active.count }
        let excess = min(idle.count + active.count - max(peakActive, 1), idle.count)
        guard excess > 0 else { return [] }
        let freed = Array(idle.prefix(excess))
        idle.removeFirst(excess)
        return freed
    }

    /// Empties the pool, returning the transfers in libcurl and the idle handles (the loop fails
    /// and frees them when it stops).
    func removeAll() -> (active: [UnsafeMutableRawPointer: Transfer], idle: [UnsafeMutableRawPointer]) {
        defer {
            active.removeAll()
            idle.removeAll()
            states.removeAll()
        }
        return (active, idle)
    }
}
