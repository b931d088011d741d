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
        guard now >= nextWarmUp else { return }
        // libcurl refuses a connection idle for more than `maximumIdleSeconds` (whole seconds);
        // replace it a little after that, while nothing waits for it.
        let tooOld = now - lastActivity > .seconds(settings.maximumIdleSeconds + 2)
        guard awaitingConnection || idleConnectionStirred || tooOld else { return }
        idleConnectionStirred = false
        let transfer = Transfer(
            urlPrefix: warmURL, method: .get, headerList: CurlMultiLoop.noHeaders, body: CurlMultiLoop.noBody,
            deadline: now + .milliseconds(settings.connectTimeoutMilliseconds) + .seconds(1), device: nil, owner: nil)
        transfer.isWarmUp = true
        transfer.completion = .warmUp { [self] failure in warmUpEnded(failure) }
        warmUp = transfer
        transfer.queued = true
        start(transfer, on: multi)
    }

    /// A warm-up transfer ended (on the loop thread): schedules the next attempt after a failure.
    func warmUpEnded(_ failure: TransportError?) {
        assertOnLoopThread()
        warmUp = nil
        lastActivity = .now
        guard let failure else {
            warmUpFailures = 0
            // Spaced, so a socket that stays readable cannot make the loop spin on warm-ups.
            nextWarmUp = .now + CurlMultiLoop.warmUpSpacing
            return
        }
        if failure.kind == .cancelled || failure.kind == .shutDown { return }
        warmUpFailures += 1
        let backOff = min(Duration.seconds(60), .seconds(1) * (1 << min(warmUpFailures - 1, 6)))
        let delay = backOff * Double.random(in: 0.8...1.2)
        nextWarmUp = .now + delay
        guard observability.isEnabled else { return }
        let metadata: Logger.Metadata = [
            "error.type": "\(failure.kind)", "error.message": "\(failure.message)",
            "apns.keep_warm.failures": "\(warmUpFailures)", "apns.keep_warm.retry_ms": "\(delay / .milliseconds(1))",
        ]
        if warmUpFailures == 1 {
            observability.logger.notice(
                "APNs connection could not be opened ahead of sends; trying again", metadata: metadata)
        } else {
            observability.logger.debug(
                "APNs connection could not be opened ahead of sends; trying again", metadata: metadata)
        }
    }

    /// The least time between two warm-ups.
    static let warmUpSpacing: Duration = .milliseconds(250)

    /// What a warm-up transfer carries: nothing it would ever write.
    static let noHeaders = HeaderList(authorization: nil, headers: [])
    static let noBody = RequestBody([])
}
