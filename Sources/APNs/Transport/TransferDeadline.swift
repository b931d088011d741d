/// A transfer's time, and the one verdict on it that every place a send waits asks for: the
/// waiting queue's sweep, the start of a transfer in libcurl, the pre-request callback before a
/// request is written, a refused request queued again, and the loop's own check of transfers
/// libcurl holds.
///
/// The deadline counts from when the send was made (``SendDeadline``), wherever it waits; a
/// request is no longer written once too little of its time is left for an answer
/// (``SendDeadline/lastWrite(submitted:deadline:)``): written then, it would most likely end
/// `unknown`; held back, it ends timed out and `notSent`. A value given the time; it reads no
/// clock.
struct TransferDeadline: Sendable, Equatable {
    /// When the transport was given the request: how long it has waited counts from here.
    let submittedAt: ContinuousClock.Instant
    /// When the send gives up.
    let deadline: ContinuousClock.Instant
    /// After this the request is no longer written.
    let lastWrite: ContinuousClock.Instant

    init(submittedAt: ContinuousClock.Instant, deadline: ContinuousClock.Instant) {
        self.submittedAt = submittedAt
        self.deadline = deadline
        lastWrite = SendDeadline.lastWrite(submitted: submittedAt, deadline: deadline)
    }

    enum Verdict: Equatable {
        /// It may still be written; `remaining` is left until the deadline (libcurl's own timeout).
        case writable(remaining: Duration)
        /// Time is left, but too little for an answer: nothing more of it is written (a warm-up,
        /// which writes nothing, may still connect for the `remaining` time).
        case tooLateToWrite(remaining: Duration)
        /// The deadline has passed.
        case passed
    }

    /// What the deadline says at `now`.
    func verdict(at now: ContinuousClock.Instant) -> Verdict {
        if now >= deadline { return .passed }
        return now < lastWrite ? .writable(remaining: deadline - now) : .tooLateToWrite(remaining: deadline - now)
    }

    /// Whether the loop ends a transfer that libcurl still holds at `now`: libcurl times out what it
    /// has a connection or stream for, with its finer judgement, so the loop waits a little past
    /// the deadline first — ``pendingSlack`` for a request never written (libcurl applies no
    /// timeout to one waiting for APNs' one stream or a handshake that never ends), the longer
    /// ``writtenSlack`` for one written (which libcurl should have timed out itself).
    func isOverdueInLibcurl(at now: ContinuousClock.Instant, written: Bool) -> Bool {
        now >= deadline + (written ? Self.writtenSlack : Self.pendingSlack)
    }

    static let pendingSlack: Duration = .milliseconds(100)
    static let writtenSlack: Duration = .milliseconds(500)
}
