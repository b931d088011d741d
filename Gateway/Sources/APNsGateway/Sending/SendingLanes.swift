/// Each credential's device-sends on the wire: a credential whose upstream is slow, stalled or
/// hung holds only its own lane, and the others' claims and sends go on. A value given what
/// starts and ends; it reads no clock and does no I/O (``Dispatcher`` does both around it).
///
/// A credential takes part in a claim while a whole claim fits in its lane (its device-sends in
/// flight at most ``perCredential`` − ``claimBatch``), so it never has more than ``perCredential``
/// on the wire; a credential without room is left out of claims until its sends end, and the
/// others are claimed as usual. What is in a lane is counted when its notification's send
/// starts and let go when that send ends: a hung upstream's sends stay counted until their
/// deadline ends them.
///
/// Thread safety: a value; the dispatcher keeps it behind a `Mutex`.
struct SendingLanes: Sendable, Equatable {
    /// Device-sends one credential may have on the wire.
    let perCredential: Int
    /// Device-sends one claim takes at most.
    let claimBatch: Int
    /// Device-sends on the wire, by credential (none: absent).
    private(set) var inFlight: [String: Int] = [:]

    init(perCredential: Int, claimBatch: Int) {
        self.perCredential = perCredential
        self.claimBatch = claimBatch
    }

    /// The most a credential may have in flight and still take part in a claim.
    private var claimable: Int { perCredential - claimBatch }

    /// The credentials a claim leaves out: those a whole claim would take past their lane.
    var full: Set<String> { Set(inFlight.filter { $0.value > claimable }.keys) }

    /// Device-sends on the wire, every credential's.
    var total: Int { inFlight.values.reduce(0, +) }

    /// `count` device-sends of `credential` started.
    mutating func started(_ credential: String, count: Int) {
        guard count > 0 else { return }
        inFlight[credential, default: 0] += count
    }

    /// `count` device-sends of `credential` ended; true when that gave it room for a claim again
    /// (the dispatcher then claims: nothing else would wake it for this credential).
    mutating func ended(_ credential: String, count: Int) -> Bool {
        let before = inFlight[credential] ?? 0
        let after = max(0, before - count)
        inFlight[credential] = after == 0 ? nil : after
        return before > claimable && after <= claimable
    }
}
