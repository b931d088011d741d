internal import CCurl
import Foundation
import Logging

// Keep-warm (`keepWarm(origin:)`): a connection opened ahead of sends and replaced when it goes.

extension CurlMultiLoop {
    /// Keep-warm: starts a warm-up transfer when ``KeepWarm`` says one is due (nothing else would
    /// touch the connection and there is none ready, or the idle one stirred, or is about to be
    /// too old to reuse).
    func warmUpIfNeeded(on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        guard
            let (_, origin, now) = keepWarm.warmUpDue(
                at: clock.now, busy: !pool.isEmpty || !queue.isEmpty,
                maximumIdle: .seconds(settings.maximumIdleSeconds), awaitingConnection: connections.awaitingConnection)
        else { return }
        let transfer = Transfer(
            origin: origin, path: "/", pathIsPlain: true, method: .get, headerList: CurlMultiLoop.noHeaders,
            body: CurlMultiLoop.noBody,
            deadline: now + .milliseconds(settings.connectTimeoutMilliseconds) + .seconds(1), submittedAt: now,
            clock: clock, isWarmUp: true)
        transfer.completion = .warmUp { [self] failure in warmUpEnded(failure) }
        keepWarm.started(transfer)
        transfer.taken()
        start(transfer, on: multi)
    }

    /// A warm-up transfer ended (on the loop thread): logs a failure that schedules another.
    func warmUpEnded(_ failure: TransportError?) {
        assertOnLoopThread()
        guard let (delay, failures) = keepWarm.ended(failure, at: clock.now, jitter: Double.random(in: 0.8...1.2)),
            let failure, observability.isEnabled
        else { return }
        let metadata: Logger.Metadata = [
            "error.type": "\(failure.kind)", "error.message": "\(failure.message)",
            "apns.keep_warm.failures": "\(failures)", "apns.keep_warm.retry_ms": "\(delay / .milliseconds(1))",
        ]
        if failures == 1 {
            observability.logger.notice(
                "APNs connection could not be opened ahead of sends; trying again", metadata: metadata)
        } else {
            observability.logger.debug(
                "APNs connection could not be opened ahead of sends; trying again", metadata: metadata)
        }
    }

    /// A transfer starts with nothing else in flight, ending an idle period. libcurl closes,
    /// instead of reusing, every connection idle for longer than `maximumIdleSeconds`
    /// (`CURLOPT_MAXAGE_CONN`, in whole seconds): a connection left idle may have gone silent
    /// (APNs has been seen to stop answering one, with TCP still open), and no libcurl can PING it
    /// to find out. Says so, and counts them.
    func idlePeriodEnds(at now: ContinuousClock.Instant, byWarmUp: Bool) {
        assertOnLoopThread()
        let idle = now - keepWarm.lastActivity
        let openSockets = connections.openSockets
        guard observability.isEnabled, !openSockets.isEmpty, idle >= .seconds(settings.maximumIdleSeconds + 1) else {
            return
        }
        observability.connectionsRetiredIdle.increment(by: Int64(openSockets.count))
        observability.logger.info(
            "APNs connection idle too long; closing it",
            metadata: [
                "apns.connection.count": "\(openSockets.count)",
                "apns.connection.idle_ms": "\(idle.millisecondsRoundedUp)",
                "apns.connection.maximum_idle_s": "\(settings.maximumIdleSeconds)",
                "apns.connection.replaced_by": byWarmUp ? "keep-warm" : "send",
            ])
    }

    /// What a warm-up transfer carries: nothing it would ever write.
    static let noHeaders = HeaderList(authorization: nil, headers: [])
    static let noBody = RequestBody([])
}
