/// Whether the connection of a written request that timed out is stalled (a server or middlebox
/// that stopped answering) or only slow, as a value given the time and the evidence: the loop
/// gathers what it knows about the connection and this decides. `StallJudgementTests` checks every rule with instants and no socket.
///
/// The connection is alive when anything arrived on it within ``silence``: nearly all of the
/// request's whole wait since it was given to the transport (not since its last write: a request
/// refused and written again with a second of its deadline left would make a second's pause of a
/// busy server look like a stall, and its connection carries a thousand others). Anything
/// received in that window means the connection still works, slow (a server answering in bursts
/// seconds apart, as an overloaded one does). Whether something was answered after this request
/// was written says nothing: a connection that answered ten requests and then went silent would
/// be found one timeout late.
///
/// Thread safety: a value.
struct StallJudgement: Equatable {
    /// The part of a timed-out request's wait the connection must have been silent for to be shut
    /// down as stalled. Half was too little: on a busy machine the in-process mock answered in
    /// bursts more than half a timeout apart, and most working sends ended `unknown` with their
    /// connection.
    static let silenceFraction = 0.9

    /// How long the connection must have been silent for.
    let silence: Duration

    /// The judgement of a request given to the transport at `submittedAt` that timed out at `now`.
    init(submittedAt: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        silence = (now - submittedAt) * Self.silenceFraction
    }

    /// Why the connection is judged alive, or that it is stalled.
    enum Verdict: Equatable {
        /// The loop read an answer on it within the silence.
        case answeredRecently
        /// Bytes the server sent wait unread on the socket: the loop is behind (a machine so busy
        /// that the loop thread fell behind), the server is not.
        case unreadBytesWaiting
        /// The kernel received something on it (an answer, a refused stream, a SETTINGS or PING
        /// frame) within the silence.
        case receivedRecently
        /// Nothing at all within the silence: shut it down.
        case stalled
    }

    /// The verdict from the answer the loop last read on the connection (`lastAnswer`, nil for
    /// none), the bytes waiting unread on its socket, and how long ago the kernel last received
    /// data on it (`TCP_INFO`, nil where it cannot tell).
    func verdict(
        now: ContinuousClock.Instant, lastAnswer: ContinuousClock.Instant?, unreadBytes: Int32,
        sinceDataReceived: Duration?
    ) -> Verdict {
        if let lastAnswer, now - lastAnswer < silence { return .answeredRecently }
        if unreadBytes > 0 { return .unreadBytesWaiting }
        if let quiet = sinceDataReceived, quiet < silence { return .receivedRecently }
        return .stalled
    }
}
