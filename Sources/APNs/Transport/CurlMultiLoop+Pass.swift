internal import CCurl
import Foundation

// The loop thread: one pass after another (inbox, queue, libcurl, outcomes, timed checks, sleep),
// and the queue of transfers waiting for room in libcurl.

extension CurlMultiLoop {
    func run() {
        guard let multi else { return }
        claimThread()
        // Foundation names the `Thread` object only; operators' tools read the kernel's name.
        _ = ccurl_name_current_thread(CurlMultiLoop.threadName)
        // Outcomes of bulk sends wake their readers once per pass, not once per push.
        let wakes = DeferredWakes.install()
        defer { wakes.uninstall() }
        // What a pass writes leaves in few TCP segments, not one per libcurl write.
        let writes = CoalescedWrites.install()
        defer { writes.uninstall() }
        // Only when the connector measures how long streams stay empty (the benchmark's).
        streamIdleProbe = settings.streamIdle.map(StreamIdleProbe.init(histogram:))
        writes.streamIdle = streamIdleProbe
        while true {
            var phase = Phase.running
            var ranJobs = true
            // A job (a task preferring this loop) usually submits a send: take it in this pass, once
            // (a task that only yields must not keep libcurl from running).
            for _ in 0..<2 where ranJobs {
                ranJobs = false
                let operations: [Operation]
                (operations, phase) = inbox.withLock { $0.take() }
                for operation in operations {
                    switch operation {
                    case .add(let transfer): enqueue(transfer)
                    case .cancel(let transfer): cancel(transfer, on: multi)
                    case .cancelGroup(let group): cancelAll(in: group, on: multi)
                    case .keepWarm(let origin): keepWarm.keep(origin: origin)
                    case .run(let job):
                        job.runSynchronously(on: asUnownedTaskExecutor())
                        ranJobs = true
                    }
                }
            }
            var pollLimit = Duration.seconds(1)
            if case .draining(let until) = phase {
                let now = clock.now
                // A drain does not wait for a warm-up.
                if let warmUp = keepWarm.warmUp, !warmUp.isFinished { cancel(warmUp, on: multi) }
                if isIdle || now >= until {
                    return stop(on: multi)
                }
                pollLimit = min(pollLimit, until - now)
            }
            if !queue.isEmpty {
                for transfer in queue.expired(at: clock.now) {
                    // Never in libcurl: not sent (or, after a refusal, not processed).
                    transfer.resume(.failure(TransportError.timedOut(delivery: transfer.delivery)))
                }
            }
            startWaiting(on: multi)
            if !pool.isEmpty { writes.begin(connections.openSockets) }
            runLibcurl(multi)
            writes.end()
            collectFinished(on: multi)
            let afterLibcurl = clock.now
            sweepExpiredActive(on: multi, now: afterLibcurl)
            trimIdleHandles(now: afterLibcurl)
            if memoryTrim?.isDue(at: afterLibcurl) == true { trimFreedMemory() }
            refillFreedStreams(on: multi, writes: writes)
            watchCycle(at: afterLibcurl, on: multi)
            if case .running = phase { warmUpIfNeeded(on: multi) }
            if !queue.isEmpty { pollLimit = min(pollLimit, WaitingQueue.sweepInterval) }
            if !pool.isEmpty { pollLimit = min(pollLimit, CurlMultiLoop.activeSweepInterval) }
            wakes.run()
            // A drain whose last transfer just finished ends now, not after the next poll's limit.
            if case .draining = phase, isIdle { continue }
            let sleep = inbox.withLock { $0.goingToSleep() }
            if sleep { poll(multi, upTo: pollLimit, phase: phase) }
        }
    }

    /// Nothing waits in the queue and nothing in libcurl is unfinished: a drain can end.
    var isIdle: Bool { queue.isEmpty && pool.transfers.allSatisfy(\.isFinished) }

    /// Fails everything left, releases libcurl, and tells whoever awaits the shutdown.
    func stop(on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        let leftovers = inbox.withLock { $0.stop() }
        for operation in leftovers {
            if case .add(let transfer) = operation {
                transfer.resume(.failure(TransportError.shutDown(delivery: .notSent)))
            }
        }
        CurlMultiLoop.runElsewhere(leftovers)
        for transfer in queue.removeAll() {
            transfer.resume(.failure(TransportError.shutDown(delivery: transfer.delivery)))
        }
        let (active, idle) = pool.removeAll()
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi, easy)
            transfer.resume(.failure(TransportError.shutDown(delivery: transfer.delivery)))
            curl_easy_cleanup(easy)
        }
        idle.forEach { curl_easy_cleanup($0) }
        curl_multi_cleanup(multi)
        share.map { _ = curl_share_cleanup($0) }  // after every easy handle that used it
        DeferredWakes.current?.run()  // every outcome reaches its reader before shutdown returns
        let waiters = inbox.withLock { $0.exit() }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends transfers inside libcurl whose deadline has passed and which libcurl has not ended.
    ///
    /// libcurl applies a transfer's timeout only once it has a connection or a stream (7.88: a
    /// transfer pending for APNs' one stream on a new token connection, or for a TLS handshake
    /// that never finishes, waits past it). A transfer whose request was never written is ended
    /// `notSent` a little after its deadline and taken out of libcurl, which has written nothing
    /// of it; one that was written, which libcurl should have timed out itself, is ended `unknown`
    /// (``TransferDeadline/isOverdueInLibcurl(at:written:)``). Runs after libcurl's own results
    /// are collected, so a timeout libcurl reported (with its finer judgement) comes first.
    func sweepExpiredActive(on multi: UnsafeMutableRawPointer, now: ContinuousClock.Instant) {
        assertOnLoopThread()
        guard !pool.isEmpty, activeSweep.isDue(at: now) else { return }
        var expired: [(UnsafeMutableRawPointer, Transfer)] = []
        // A transfer already ended (cancelled) but still pending in libcurl is taken out too.
        for (easy, transfer) in pool.active {
            if transfer.time.isOverdueInLibcurl(at: now, written: transfer.isWritten) {
                expired.append((easy, transfer))
            }
        }
        for (easy, transfer) in expired {
            _ = pool.ended(easy)
            curl_multi_remove_handle(multi, easy)
            transfer.detach()
            discard(easy)  // taken out mid-way: in a state not worth reusing
            guard !transfer.isFinished else {
                if transfer.isProbe { record(.neutral, probe: true) }
                continue
            }
            if transfer.isWritten { closeIfStalled(transfer) }
            let result: Result<APNsHTTPResponse, any Error> = .failure(
                TransportError.timedOut(delivery: transfer.delivery))
            if breaker != nil { record(CircuitBreaker.signal(for: result), probe: transfer.isProbe) }
            transfer.resume(result)
        }
    }

    /// Frees the idle easy handles beyond the recent need (``HandlePool/excessIdle(at:)``); the
    /// loop makes new ones when it needs them.
    func trimIdleHandles(now: ContinuousClock.Instant) {
        assertOnLoopThread()
        for easy in pool.excessIdle(at: now) { discard(easy) }
    }

    /// Hands freed heap memory back to the system (``TransportConfiguration/memoryTrimInterval``),
    /// at most once per interval in the process, whichever connector's loop asks.
    ///
    /// Thread safety: called from any transport's loop thread; the last trim's time is behind a
    /// lock, and `malloc_trim` locks glibc's arenas itself.
    enum FreedMemory {
        /// When the last trim began, and how many this process has made.
        private static let state = Locked<(last: ContinuousClock.Instant?, count: Int)>((nil, 0))

        /// Trims unless another loop did within `interval`; how long it took, if it did. On the
        /// real clock, whatever the loops' own: the process's one heap is shared by connectors
        /// whose clocks may differ (a test's), and only real time compares across them.
        static func trim(every interval: Duration) -> Duration? {
            let now = ContinuousClock.now
            let due = state.withLock { state -> Bool in
                if let previous = state.last, now - previous < interval { return false }
                state.last = now
                return true
            }
            guard due, ccurl_trim_heap() >= 0 else { return nil }
            state.withLock { $0.count += 1 }
            return .now - now
        }

        /// How many trims this process has made (for tests).
        static var trims: Int { state.withLock { $0.count } }
    }

    /// ``FreedMemory/trim(every:)`` with this loop's interval, logged at `debug` with its duration.
    func trimFreedMemory() {
        assertOnLoopThread()
        guard let interval = settings.memoryTrimInterval, let took = FreedMemory.trim(every: interval),
            observability.isEnabled
        else { return }
        observability.logger.debug(
            "handed freed heap memory back to the system",
            metadata: ["apns.memory_trim.duration_us": "\(took / .microseconds(1))"])
    }

    /// Refills the streams this pass's answers freed from the queue and lets libcurl write those
    /// requests now, corked as the pass's own writes are: a freed stream's next request leaves in
    /// the pass that read its answer, not after the outcomes' readers are woken and the loop has
    /// polled again. What libcurl finished meanwhile (a request stopped before it was written) is
    /// collected at once; whatever that sends back to the queue starts in the next pass.
    func refillFreedStreams(on multi: UnsafeMutableRawPointer, writes: CoalescedWrites) {
        let before = pool.count
        startWaiting(on: multi)
        guard pool.count > before, sockets.takeTimer(at: .now) else { return }
        writes.begin(connections.openSockets)
        runDue(multi)
        writes.end()
        collectFinished(on: multi)
    }

    /// Moves waiting transfers into libcurl while there is room.
    func startWaiting(on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        if !connections.retiring.isEmpty {
            closeRetiredConnections()
            guard connections.retiring.isEmpty else { return }
        }
        if connections.connectionsPerHost > 1 { spreadOverConnections(on: multi) }
        while pool.count < connections.streamsInPool, let transfer = queue.next() { start(transfer, on: multi) }
        queue.compact()
    }

    /// Spreads a pool's requests evenly over its connections. libcurl gives a request to the first
    /// connection with room under its stream limit, so with the configured limit a pool of four
    /// carrying 500 requests put 497 on one connection and one on each of the others (measured): a
    /// reset of that connection would have made 497 outcomes `unknown` instead of 125, and one
    /// connection did the work of four. So the limit libcurl applies when it picks a connection
    /// follows the demand: each connection's share of what is in libcurl and waiting for it, at
    /// least one and at most the configured streams. A request finds no room on a connection that
    /// holds its share and goes to (or opens) the next, and the pool's room is never below the
    /// demand.
    ///
    /// The share is lowered only while libcurl holds no request. libcurl parks a request that finds
    /// no room (as it must while a new token connection allows one stream) and looks at it again
    /// only when a transfer ends or a connection changes; a limit lowered under it would hold it
    /// back longer. So after a burst the share stays at its peak until libcurl is idle: a later,
    /// smaller load on a busy pool may sit on fewer connections. A connection closing after GOAWAY
    /// still counts among the pool's until it has closed (libcurl opens no other meanwhile), so
    /// until then the others' room falls short of the demand by up to one share, and what does not
    /// fit waits in libcurl; where that happens most, a server sending GOAWAY every few hundred
    /// streams, a pool with the share still sends as fast as one without. One connection (the
    /// default) is never limited below its streams.
    func spreadOverConnections(on multi: UnsafeMutableRawPointer) {
        let demand = min(connections.streamsInPool, pool.count + queue.count)
        guard let share = connections.streamLimit(forDemand: demand, libcurlIdle: pool.isEmpty) else { return }
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, share)
    }

    /// Completes `transfer` as cancelled at once. A request already written is withdrawn from its
    /// connection (its stream reset); one not yet written stays with libcurl, which may still be
    /// resolving or connecting for it — removing it then could block this thread on the resolver —
    /// and is aborted by the pre-request callback before any byte is written.
    func cancel(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        guard !transfer.isFinished else { return }
        transfer.askCancellation()
        if let easy = transfer.easy, transfer.isWritten, pool.ended(easy) != nil {
            curl_multi_remove_handle(multi, easy)
            recycle(easy)
            transfer.detach()
            transfer.resume(.failure(TransportError.cancelled(delivery: .unknown)))
        } else if case .queued = transfer.life {
            transfer.resume(.failure(TransportError.cancelled(delivery: .notSent)))
        }
        // Otherwise its `add` has not been processed yet; `enqueue` sees `cancelled`.
    }

    func cancelAll(in group: TransferGroup, on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        group.cancel()
        for transfer in Array(pool.transfers) where transfer.group === group { cancel(transfer, on: multi) }
        for transfer in queue.waiting where transfer.group === group { cancel(transfer, on: multi) }
    }

    func enqueue(_ transfer: Transfer) {
        assertOnLoopThread()
        if transfer.isCancelled {
            transfer.resume(.failure(TransportError.cancelled(delivery: .notSent)))
            return
        }
        transfer.taken()
        queue.append(transfer)
    }
}
