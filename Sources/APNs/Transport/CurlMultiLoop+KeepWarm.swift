internal import CCurl
import Foundation
import Logging

// Keep-warm (`keepWarm(url:)`): a connection opened ahead of sends and replaced when it goes.

extension CurlMultiLoop {
    /// Keep-warm: starts a warm-up transfer when nothing else would touch the connection and
    /// there is none ready (or the idle one stirred, or is about to be too old to reuse).
    func warmUpIfNeeded(on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        guard let warmURL, warmUp == nil, active.isEmpty, waitingHead == waiting.count else { return }
        let now = ContinuousClock.now
        guard
            keepWarmSchedule.isDue(
                now: now, lastActivity: lastActivity, maximumIdle: .seconds(settings.maximumIdleSeconds),
                awaitingConnection: awaitingConnection, stirred: idleConnectionStirred)
        else { return }
        idleConnectionStirred = false
        let transfer = Transfer(
            urlPrefix: warmURL, method: .get, headerList: CurlMultiLoop.noHeaders, body: CurlMultiLoop.noBody,
            deadline: now + .milliseconds(settings.connectTimeoutMilliseconds) + .seconds(1), device: nil, owner: nil,
            isWarmUp: true)
        transfer.completion = .warmUp { [self] failure in warmUpEnded(failure) }
        warmUp = transfer
        transfer.taken()
        start(transfer, on: multi)
    }

    /// A warm-up transfer ended (on the loop thread): schedules the next attempt after a failure.
    func warmUpEnded(_ failure: TransportError?) {
        assertOnLoopThread()
        warmUp = nil
        let now = ContinuousClock.now
        lastActivity = now
        guard let failure else {
            keepWarmSchedule.succeeded(at: now)
            return
        }
        if failure.kind == .cancelled || failure.kind == .shutDown { return }
        let delay = keepWarmSchedule.failed(at: now, jitter: Double.random(in: 0.8...1.2))
        let failures = keepWarmSchedule.failures
        guard observability.isEnabled else { return }
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

    /// What a warm-up transfer carries: nothing it would ever write.
    static let noHeaders = HeaderList(authorization: nil, headers: [])
    static let noBody = RequestBody([])
}
