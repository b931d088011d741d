import APNs
import Foundation

/// Why sending is paused: a cause outside the device-send, which the next send would meet too.
/// None of these spends a device-send's attempts; each pauses every send through the connector.
package enum UpstreamCause: String, Sendable, CaseIterable {
    /// No answer could be had: DNS, connect, TLS, proxy, a server without HTTP/2, the connector's
    /// circuit breaker open, or a deadline that passed before the request was written.
    case unreachable
    /// APNs answered with a server error (500 InternalServerError, 503 ServiceUnavailable or
    /// Shutdown).
    case serverError = "server-error"
    /// APNs refused the credential (the key, team, certificate or its environment), or its tokens
    /// (TooManyProviderTokenUpdates, a token called expired after a fresh one).
    case credentials
    /// Sends were written and not answered within their deadline: the connection, or APNs, holds
    /// requests without answering. Unlike the others, the device-send that met it may have been
    /// delivered: it is finished `unknown`, never sent again; the pause keeps the credential's
    /// next sends from meeting it too.
    case unanswered

    /// The cause of a send's failure, when it is upstream and the device-send provably did not
    /// reach APNs (so it waits for the pause's end); nil otherwise. ``unanswered`` is judged
    /// apart (``isUnanswered(_:)``).
    static func of(_ result: Result<APNsResponse, APNsError>) -> UpstreamCause? {
        switch result {
        case .success:
            return nil
        case .failure(.rejected(let rejection)):
            if (500...599).contains(rejection.status) { return .serverError }
            guard let reason = rejection.reason else { return nil }
            if reason.refusesTheCredential || reason == .tooManyProviderTokenUpdates
                || reason == .expiredProviderToken || reason == .unrelatedKeyIdInToken
            {
                return .credentials
            }
            return nil
        case .failure(.transport(let failure)):
            guard failure.delivery == .notSent else { return nil }
            switch failure.kind {
            case .cancelled, .shutDown: return nil
            default: return .unreachable
            }
        case .failure(.credential):
            return .credentials
        case .failure:
            return nil
        }
    }

    /// Whether a send was written and its deadline passed without an answer.
    static func isUnanswered(_ result: Result<APNsResponse, APNsError>) -> Bool {
        guard case .failure(.transport(let failure)) = result else { return false }
        return failure.kind == .timeout && failure.delivery == .unknown
    }
}

/// Whether the dispatcher sends, as a value given the time and what sends report; it reads no
/// clock and does no I/O (``Dispatcher`` does both around it).
///
/// A send that fails upstream (``UpstreamCause``) pauses sending: nothing more starts, and what
/// was claimed and not started is queued again for the pause's end, its attempts unspent.
///
/// - When APNs said how long to wait (a server error with `Retry-After`, honoured up to
///   ``longestRetryAfter``), the pause lasts that long and sending then resumes as before: the
///   server named the end.
/// - Otherwise the end is unknown: when the pause is over, one device-send is claimed alone, as a
///   probe. An answer from APNs that is not upstream trouble (any success or device-level
///   refusal) resumes sending; another upstream failure pauses again, twice as long (from
///   ``firstPause`` up to ``longestPause``).
///
/// Thread safety: a value; the dispatcher keeps it behind a `Mutex`.
struct UpstreamPause: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// Sends start as claims allow.
        case sending
        /// Nothing starts until then; then a probe, or (when APNs named the end) sending again.
        case paused(until: Date, probe: Bool)
        /// One device-send was claimed to find out whether the cause is gone; nothing else starts.
        case probing
    }

    /// What a claim may take.
    enum Claim: Sendable, Equatable {
        /// A whole batch.
        case batch
        /// One device-send, the probe.
        case probe
        /// Nothing: paused, or a probe is out.
        case nothing
    }

    /// What changed, for the log and the metrics.
    enum Change: Sendable, Equatable {
        /// Sending paused for `cause`, until `until`.
        case paused(UpstreamCause, until: Date)
        /// A probe met the cause again: paused longer.
        case stillPaused(UpstreamCause, until: Date)
        /// A send was answered: sending resumes.
        case resumed(after: UpstreamCause)
    }

    static let firstPause: Duration = .seconds(1)
    static let longestPause: Duration = .seconds(30)
    /// The longest `Retry-After` honoured.
    static let longestRetryAfter: Duration = .seconds(3_600)

    private(set) var state = State.sending
    /// The cause of the current pause.
    private(set) var cause: UpstreamCause?
    /// Pauses in a row without an answer in between.
    private(set) var pauses = 0

    /// What a claim at `now` may take; a due probe is taken by this call (the next gets nothing
    /// until the probe is reported).
    mutating func claim(at now: Date) -> Claim {
        switch state {
        case .sending: return .batch
        case .probing: return .nothing
        case .paused(let until, let probe):
            guard now >= until else { return .nothing }
            guard probe else {
                // APNs named the end of the pause: sending resumes, and the next failure, if any,
                // pauses it again.
                state = .sending
                return .batch
            }
            state = .probing
            return .probe
        }
    }

    /// Whether a send claimed earlier may start at `now`: not while paused (the probe, once
    /// claimed, may).
    func mayStart(at now: Date) -> Bool {
        if case .paused(let until, _) = state { return now >= until }
        return true
    }

    /// When device-sends stopped by this pause are due again: the pause's end, or `now`.
    func resumesAt(_ now: Date) -> Date {
        if case .paused(let until, _) = state { return max(until, now) }
        return now
    }

    /// A send failed upstream at `now`, with APNs' `Retry-After` if it sent one; `jitter` (0.8–1.2)
    /// spreads the pauses of several instances.
    mutating func failed(
        _ cause: UpstreamCause, retryAfter: Duration?, at now: Date, jitter: Double
    ) -> Change? {
        let named = retryAfter.map { min($0, Self.longestRetryAfter) }
        switch state {
        case .paused(let until, let probe):
            // Sends that were out when the pause began: only a longer Retry-After moves its end.
            if let named, now + named > until { state = .paused(until: now + named, probe: probe) }
            return nil
        case .sending, .probing:
            let wasPaused = self.cause != nil
            let length: Duration
            if let named {
                // Never sooner than APNs asked: the jitter only adds.
                length = named * max(1, jitter)
            } else {
                length = Backoff(initial: Self.firstPause, maximum: Self.longestPause)
                    .delay(beforeRetry: pauses + 1, factor: jitter)
            }
            pauses += 1
            self.cause = cause
            state = .paused(until: now + length, probe: named == nil)
            return wasPaused ? .stillPaused(cause, until: now + length) : .paused(cause, until: now + length)
        }
    }

    /// APNs answered a send with something other than upstream trouble: sending resumes (a
    /// pause APNs named the end of is over when it answers too).
    mutating func answered() -> Change? {
        defer {
            state = .sending
            pauses = 0
            cause = nil
        }
        guard let cause else { return nil }
        return .resumed(after: cause)
    }

    /// The probe ended with no verdict (its device-send expired, or was not sent for a reason of
    /// its own): the next claim probes again at once.
    mutating func probeEnded(at now: Date) {
        if state == .probing { state = .paused(until: now, probe: true) }
    }
}

/// Whether a dispatcher sends, as readiness reports it.
package enum SendingStatus: Sendable, Equatable {
    case sending
    /// Paused for `cause`: device-sends wait, their attempts unspent; a probe goes out in
    /// `probeIn` (zero: one is out, or goes with the next claim).
    case paused(UpstreamCause, probeIn: Duration)
}

/// Each credential's ``UpstreamPause``: an outage or a refused credential pauses the apps that
/// credential serves, and the others go on sending. A value given the time and what sends report;
/// it reads no clock and does no I/O.
///
/// A credential's name is the stored credential's, or the fallback's (`default`) for apps the
/// credential flags serve. Most causes (APNs unreachable, its server errors) would pause every
/// credential in turn, each finding the outage with its own first failure and probing on its own.
///
/// Thread safety: a value; the dispatcher keeps it behind a `Mutex`.
struct CredentialPauses: Sendable, Equatable {
    private(set) var byCredential: [String: UpstreamPause] = [:]

    /// What a claim at `now` may take: the credentials whose apps it must leave out (paused, or
    /// probing), and those whose probe is due now (taken by this call).
    mutating func claims(at now: Date) -> (blocked: Set<String>, probes: [String]) {
        var blocked: Set<String> = []
        var probes: [String] = []
        for name in byCredential.keys.sorted() {
            switch byCredential[name]?.claim(at: now) {
            case .batch?, nil: break
            case .probe?:
                blocked.insert(name)
                probes.append(name)
            case .nothing?:
                blocked.insert(name)
            }
        }
        return (blocked, probes)
    }

    func mayStart(_ credential: String, at now: Date) -> Bool {
        byCredential[credential]?.mayStart(at: now) ?? true
    }

    func resumesAt(_ credential: String, _ now: Date) -> Date {
        byCredential[credential]?.resumesAt(now) ?? now
    }

    func cause(of credential: String) -> UpstreamCause? { byCredential[credential]?.cause }

    mutating func failed(
        _ credential: String, _ cause: UpstreamCause, retryAfter: Duration?, at now: Date,
        jitter: Double
    ) -> UpstreamPause.Change? {
        byCredential[credential, default: UpstreamPause()].failed(
            cause, retryAfter: retryAfter, at: now, jitter: jitter)
    }

    mutating func answered(_ credential: String) -> UpstreamPause.Change? {
        guard byCredential[credential] != nil else { return nil }
        defer { byCredential[credential] = nil }
        return byCredential[credential]?.answered()
    }

    mutating func probeEnded(_ credential: String, at now: Date) {
        byCredential[credential]?.probeEnded(at: now)
    }

    /// Sending, or the pause of a paused credential (the one whose probe comes first), for
    /// readiness; the log and `apns_gateway_sending_paused` name each credential.
    func status(at now: Date) -> SendingStatus {
        var soonest: (UpstreamCause, Duration)?
        for pause in byCredential.values {
            guard let cause = pause.cause else { continue }
            let probeIn: Duration
            switch pause.state {
            case .sending: continue
            case .paused(let until, _): probeIn = max(.zero, until - now)
            case .probing: probeIn = .zero
            }
            if let earlier = soonest, earlier.1 <= probeIn { continue }
            soonest = (cause, probeIn)
        }
        guard let soonest else { return .sending }
        return .paused(soonest.0, probeIn: soonest.1)
    }
}
