internal import CCurl
import Foundation
import Logging

// Outcomes: what a finished transfer means (an answer, a re-send that cannot duplicate, a
// failure with its delivery), and what it tells the circuit breaker.

extension CurlMultiLoop {
    /// The easy handles libcurl reported done in one pass, with their results: read from libcurl
    /// first, then finished (kept for its capacity).
    ///
    /// Thread safety: none; the loop thread alone uses it.
    final class FinishedInPass {
        @exclusivity(unchecked) private(set) var transfers: [(UnsafeMutableRawPointer, CURLcode)] = []
        func clear() { transfers.removeAll(keepingCapacity: true) }
        func add(_ easy: UnsafeMutableRawPointer, _ code: CURLcode) { transfers.append((easy, code)) }
    }

    func collectFinished(on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        var remaining: Int32 = 0
        finishedInPass.clear()
        var now: ContinuousClock.Instant?
        var answers = 0
        var fastest: Duration?
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            // An answer read in this pass is life on its connection before any timeout of the same
            // pass is judged (libcurl lists them in no particular order). One clock read a pass.
            if code == CURLE_OK, let written = pool.transfer(on: easy)?.writtenOn, written.localPort != 0 {
                let answeredAt = now ?? clock.now
                now = answeredAt
                connections.answered(onPort: written.localPort, at: answeredAt)
                streamIdleProbe?.freed(at: .now)
                answers += 1
                let took = answeredAt - written.at
                fastest = min(fastest ?? took, took)
            }
            finishedInPass.add(easy, code)
        }
        for (easy, code) in finishedInPass.transfers { finish(easy, code: code, on: multi) }
        // A pass may collect twice (``refillFreedStreams(on:writes:)``): its answers add up.
        answeredInPass.answers += answers
        if let fastest { answeredInPass.fastest = min(answeredInPass.fastest ?? fastest, fastest) }
    }

    /// Gives the pass's answers and what libcurl holds now to the pool's ``CycleWatch``, at `now`
    /// (after the pass refilled libcurl), says when a slow spell begins or ends, and adds a
    /// connection when one begins or takes an added one away when the demand no longer needs it
    /// (``PoolGrowth``).
    func watchCycle(at now: ContinuousClock.Instant, on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        let (answers, fastest) = answeredInPass
        answeredInPass = (0, nil)
        if let fewer = connections.passed(demand: pool.count + queue.count, at: now) {
            shrinkPool(to: fewer, on: multi)
        }
        guard !pool.isEmpty || cycleWatch.isSlow || answers > 0 else { return }
        let change = cycleWatch.pass(
            answers: answers, fastest: fastest, busy: pool.count, limit: connections.streamsInPool, at: now)
        switch change {
        case .slow(let judgement)?:
            let before = connections.connectionsPerHost
            let added = connections.slowSpellBegan(at: now)
            if let added { growPool(to: added, on: multi) }
            inbox.withLock { $0.slowCycles += 1 }
            guard observability.isEnabled else { return }
            observability.slowCycles.increment()
            let message: Logger.Message =
                added != nil
                ? "Every APNs stream is busy and each takes longer than the round trip per request: the server answers late, or this process refills streams slowly; opening another connection (additionalConnectionsWhenSlow)"
                : "Every APNs stream is busy and each takes longer than the round trip per request: the server answers late, or this process refills streams slowly; with CPU to spare, another connection (maximumConnectionsPerHost, additionalConnectionsWhenSlow) would send more"
            observability.logger.notice(
                message,
                metadata: [
                    "apns.pool.pushes_per_second": "\(Int(judgement.rate))",
                    "apns.pool.bound_per_second": "\(Int(judgement.bound))",
                    "apns.pool.streams_busy": "\(Int(judgement.streams))",
                    "apns.pool.streams": "\(judgement.limit)",
                    "apns.pool.round_trip_ms": "\(judgement.roundTrip.millisecondsRoundedUp)",
                    "apns.pool.cycle_ms": "\(judgement.cycle.millisecondsRoundedUp)",
                    "apns.pool.connections": "\(before)",
                    "apns.pool.connections_now": "\(connections.connectionsPerHost)",
                ])
        case .recovered?:
            guard observability.isEnabled else { return }
            observability.logger.info("APNs streams keep up with the round trip again, or are no longer all busy")
        case nil:
            break
        }
    }

    /// The pool carries one connection more (`resize`): libcurl may open it, and the loop hands
    /// libcurl that many connections' streams.
    func growPool(to resize: ConnectionTable.Resize, on multi: UnsafeMutableRawPointer) {
        apply(resize, on: multi)
        inbox.withLock { $0.connectionsAdded += 1 }
        if observability.isEnabled { observability.connectionsAdded.increment() }
    }

    /// The pool carries one connection fewer (`resize`): the newest connection that takes requests
    /// is retired (nothing more is written on it, nothing new starts until the requests written on
    /// it are answered, then it is shut down: ``closeRetiredConnections()``). When the pool has no
    /// more connections open than it now carries (an idle one closed meanwhile), only the limits
    /// change, and nothing is counted as retired.
    func shrinkPool(to resize: ConnectionTable.Resize, on multi: UnsafeMutableRawPointer) {
        apply(resize, on: multi)
        let usable = connections.socketsInOrder.map(localPort(of:)).filter {
            $0 != 0 && !connections.isStalled(port: $0)
        }
        guard usable.count > resize.connections, let retired = usable.last, connections.retire(port: retired) else {
            return
        }
        inbox.withLock { $0.connectionsRetired += 1 }
        guard observability.isEnabled else { return }
        observability.connectionsRetired.increment()
        observability.logger.info(
            "APNs demand fits fewer connections again; closing the one added while slow once its requests are answered",
            metadata: [
                "apns.pool.connections": "\(resize.connections)",
                "apns.connection.local_port": "\(retired)",
            ])
    }

    /// libcurl's limits for the pool's new size: the connections it may open, and the stream limit
    /// when that changed with it.
    func apply(_ resize: ConnectionTable.Resize, on multi: UnsafeMutableRawPointer) {
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, resize.connections)
        if let streams = resize.streamLimit {
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams)
        }
    }

    func finish(_ easy: UnsafeMutableRawPointer, code: CURLcode, on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        curl_multi_remove_handle(multi, easy)
        var connects = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        if connects > 0 {
            inbox.withLock { $0.count(connectionsOpened: connects) }
            connections.established()
            connectionEstablished(easy, count: connects, code: code)
        }
        guard let transfer = pool.ended(easy) else {
            recycle(easy)
            return
        }
        if pool.isEmpty { keepWarm.activityEnded(at: clock.now) }
        transfer.detach()
        // libcurl counts its re-sends on the easy handle (`state.retrycount`) and resets the count
        // only in curl_easy_reset: a handle that went through one is reset and configured again, or
        // later refusals would find libcurl's budget spent.
        var reusable = true
        if transfer.attempts > 1 {
            curl_easy_reset(easy)
            if let state = pool.state(of: easy) {
                state.forget()
                do throws(RefusedOption) { try configureOnce(easy, errorBuffer: state.errorBuffer) } catch {
                    reusable = false
                }
            }
        }
        defer { if reusable { recycle(easy) } else { discard(easy) } }
        guard !transfer.isFinished else {
            // Cancelled or timed out while libcurl had it.
            if transfer.isProbe { record(.neutral, probe: true) }
            return
        }
        if transfer.isWarmUp {
            // It stops itself at the pre-request callback: ready means it got there over HTTP/2.
            if transfer.retry == .warmedUp {
                if breaker != nil { record(.healthy, probe: transfer.isProbe) }
                transfer.resumeWarmedUp()
                return
            }
            let failure =
                transfer.retry == .notHTTP2
                ? TransportError.notHTTP2NothingWritten
                : failure(of: easy, code: code, delivery: .notSent)
            if breaker != nil { record(CircuitBreaker.signal(for: .failure(failure)), probe: transfer.isProbe) }
            transfer.resume(.failure(failure))
            return
        }
        let result: Result<APNsHTTPResponse, any Error>
        if code == CURLE_OK {
            var status = 0
            var version = 0
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            if transfer.writtenOn?.negotiatedH2 == true {
                version = Int(CURL_HTTP_VERSION_2_0)
            } else {
                _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            }
            if version == Int(CURL_HTTP_VERSION_2_0) {
                let response = APNsHTTPResponse(
                    status: status, headers: transfer.responseHeaders, body: transfer.responseBody)
                if status == 403, transfer.localPort != 0,
                    APNsRejection(response).reason == .unrelatedKeyIdInToken
                {
                    retireTiedToAnotherKey(port: transfer.localPort)
                }
                result = .success(response)
            } else {
                result = .failure(
                    TransportError(
                        kind: .notHTTP2, delivery: .unknown,
                        message: "the server answered over HTTP/1.1 (it offered no ALPN h2)"))
            }
        } else {
            switch transfer.retry {
            case .refused?, .stalledConnection?:
                // The server refused the stream before processing it, or the request was stopped
                // before it was written to a connection shut down as stalled: sending it again
                // cannot duplicate it. It is queued again until its deadline. (An HTTP/2 refusal
                // is an answer: for the circuit breaker, the path to APNs works.)
                let refused = transfer.retry == .refused
                if transfer.isProbe { record(refused ? .healthy : .neutral, probe: true) }
                transfer.prepareForResubmission()
                if observability.isEnabled, refused {
                    observability.retried(.refusedStream)
                    observability.logger.debug(
                        "APNs refused the stream before processing it; sending it again",
                        metadata: ["apns.resubmissions": "\(transfer.resubmissions)"])
                }
                if transfer.time.verdict(at: clock.now) != .passed,
                    transfer.resubmissions <= Transfer.maximumResubmissions
                {
                    queue.append(transfer)
                } else {
                    transfer.resume(.failure(TransportError.timedOut(delivery: .notSent)))
                }
                return
            case .connectionDied?:
                result = .failure(TransportError.connectionLost(curlCode: Int(code.rawValue)))
            case .cancelled?:
                result = .failure(TransportError.cancelled(delivery: .notSent))
            case .tooLate?:
                result = .failure(TransportError.tooLateToWrite)
            case .notHTTP2?:
                result = .failure(TransportError.notHTTP2NothingWritten)
            case .warmedUp?:  // only a warm-up stops there, and it returned above
                result = .failure(
                    TransportError(kind: .other, delivery: .notSent, message: "stopped before anything was written"))
            case nil:
                if code == CURLE_OPERATION_TIMEDOUT,
                    transfer.wasRefusedBeforeTimingOut(easy, errorBuffer: pool.state(of: easy)?.errorBuffer)
                {
                    // Refused, then re-sent by libcurl, and the re-send found no connection in time.
                    result = .failure(TransportError.timedOut(delivery: .notSent))
                    break
                }
                if code == CURLE_OPERATION_TIMEDOUT, transfer.isWritten { closeIfStalled(transfer) }
                if transfer.isWritten, transfer.localPort != 0, !hasOpenSocket(localPort: transfer.localPort) {
                    // The connection the request was written on is closed and never answered it.
                    // What libcurl reports last (a timeout or connect error while it waited for a
                    // new connection, the framing layer giving up) does not change that.
                    result = .failure(
                        TransportError.connectionLost(
                            curlCode: Int(code.rawValue), then: errorMessage(of: easy, code: code)))
                } else {
                    result = .failure(failure(of: easy, code: code, delivery: transfer.delivery))
                }
            }
        }
        if breaker != nil { record(CircuitBreaker.signal(for: result), probe: transfer.isProbe) }
        transfer.resume(result)
    }

    func record(_ signal: CircuitBreaker.Signal, probe: Bool) {
        assertOnLoopThread()
        guard let steady = breaker?.isSteady else { return }
        if steady, !probe {
            switch signal {
            case .healthy, .neutral: return  // nothing to count
            case .failing: break
            }
        }
        let trips = breaker?.trips ?? 0
        let wasClosed = breaker?.isClosed ?? true
        breaker?.record(signal, probe: probe, now: clock.now)
        guard let breaker else { return }
        if breaker.trips != trips {
            inbox.withLock { $0.count(circuitTrips: breaker.trips) }
            if observability.isEnabled {
                observability.circuitTrips.increment()
                observability.logger.notice(
                    "APNs circuit breaker opened: failing sends at once until a probe succeeds",
                    metadata: [
                        "apns.circuit.last_failure": "\(breaker.lastFailure)",
                        "apns.circuit.cool_down_ms": "\(breaker.coolDown.map { $0 / .milliseconds(1) } ?? 0)",
                    ])
            }
        } else if !wasClosed, breaker.isClosed, observability.isEnabled {
            observability.logger.info("APNs circuit breaker closed: a probe got an answer")
        }
    }
}
