@testable import APNs
import CCurl
import Synchronization
import Testing

/// A transfer's life as the loop drives it — submitted, queued, written, finished — step by step,
/// without libcurl or a socket: the loop's calls are made directly (a pre-request callback with no
/// easy handle reads no connection), and what each step means for delivery is checked. The fault
/// matrix drives the same steps through libcurl against a misbehaving server.
@Suite struct TransferLifeTests {
    /// The results a transfer delivered, in order.
    final class Results: Sendable {
        let delivered = Mutex<[String]>([])
        var all: [String] { delivered.withLock { $0 } }
    }

    /// A transfer handed over `waited` ago with `timeout` in all.
    func transfer(
        _ results: Results, warmUp: Bool = false, group: TransferGroup? = nil, timeout: Duration = .seconds(60),
        waited: Duration = .zero
    ) -> Transfer {
        let submitted = ContinuousClock.now - waited
        let transfer = Transfer(
            origin: "https://127.0.0.1:1", path: "/3/device/", pathSuffix: "ab", pathIsPlain: true, method: .post,
            headerList: CurlMultiLoop.noHeaders, body: CurlMultiLoop.noBody, deadline: submitted + timeout,
            submittedAt: submitted, clock: ContinuousWaitClock.shared, group: group, isWarmUp: warmUp)
        if warmUp {
            transfer.completion = .warmUp { error in
                results.delivered.withLock { $0.append(error == nil ? "warm" : "cold") }
            }
        } else {
            transfer.completion = .callback { _, result in
                results.delivered.withLock {
                    switch result {
                    case .success(let response): $0.append("\(response.status)")
                    case .failure(let error as TransportError): $0.append("\(error.kind.rawValue) \(error.delivery)")
                    case .failure: $0.append("other")
                    }
                }
            }
        }
        return transfer
    }

    @Test func aSendIsNotSentUntilLibcurlIsAboutToWriteIt() {
        let results = Results()
        let transfer = transfer(results)
        #expect(transfer.life == .submitted)
        #expect(transfer.delivery == .notSent)
        transfer.taken()
        #expect(transfer.life == .queued)
        #expect(transfer.delivery == .notSent)
        transfer.taken()
        #expect(transfer.life == .queued, "taking it in twice changes nothing")
        _ = transfer.willSend(localPort: 4242)
        #expect(transfer.isWritten)
        #expect(transfer.delivery == .unknown)
        #expect(transfer.localPort == 4242)
        #expect(transfer.retry == nil)
    }

    @Test func libcurlsOwnReSendIsStoppedAndARefusalGoesBackToTheQueueNotSent() {
        let results = Results()
        let transfer = transfer(results)
        transfer.taken()
        _ = transfer.willSend(localPort: 4242)
        // libcurl wants to send it again; no error was reported and the errno is unchanged: the
        // server refused the stream before processing it.
        _ = transfer.willSend(localPort: 4243)
        #expect(transfer.retry == .refused)
        #expect(transfer.isWritten, "until the loop queues it again")
        transfer.prepareForResubmission()
        #expect(transfer.life == .queued)
        #expect(transfer.delivery == .notSent)
        #expect(transfer.retry == nil && transfer.attempts == 0)
        _ = transfer.willSend(localPort: 4244)
        #expect(transfer.isWritten)
        #expect(transfer.localPort == 4244)
    }

    @Test func aTransferFinishesOnceWhateverStepItIsAt() {
        let results = Results()
        let queued = transfer(results)
        queued.taken()
        queued.resume(.failure(TransportError(kind: .timeout, delivery: queued.delivery, message: "deadline")))
        #expect(queued.life == .finished)
        queued.resume(.success(APNsHTTPResponse(status: 200, headers: [], body: [])))
        _ = queued.willSend(localPort: 1)
        #expect(queued.life == .finished, "a finished transfer is never written")
        let written = transfer(results)
        written.taken()
        _ = written.willSend(localPort: 2)
        written.resume(.success(APNsHTTPResponse(status: 200, headers: [], body: [])))
        written.prepareForResubmission()
        #expect(written.life == .finished)
        #expect(results.all == ["timeout not-sent", "200"])
    }

    @Test func aCancelledTransferIsStoppedBeforeAnythingIsWritten() {
        let results = Results()
        let direct = transfer(results)
        direct.taken()
        direct.askCancellation()
        _ = direct.willSend(localPort: 1)
        #expect(direct.retry == .cancelled)
        #expect(direct.life == .queued)
        #expect(direct.delivery == .notSent)
        let group = TransferGroup()
        let owned = transfer(results, group: group)
        owned.taken()
        group.cancel()
        _ = owned.willSend(localPort: 1)
        #expect(owned.retry == .cancelled)
        #expect(owned.delivery == .notSent)
        #expect(results.all.isEmpty, "the loop delivers the result, not the callback")
    }

    /// A request that waited for a stream or a connection until less than a tenth of its time (at
    /// most a second) is left is not written: it ends not sent, where written it would most likely
    /// end unknown. One with more left is written.
    @Test func aRequestWithTooLittleTimeLeftForAnAnswerIsNotWritten() {
        let results = Results()
        let late = transfer(results, timeout: .seconds(2), waited: .milliseconds(1_850))
        late.taken()
        #expect(late.willSend(localPort: 1) == Int32(CURL_PREREQFUNC_ABORT))
        #expect(late.retry == .tooLate)
        #expect(late.life == .queued)
        #expect(late.delivery == .notSent)
        let capped = transfer(results, timeout: .seconds(60), waited: .milliseconds(59_100))
        capped.taken()
        #expect(capped.willSend(localPort: 1) == Int32(CURL_PREREQFUNC_ABORT), "a second at most is kept")
        #expect(capped.retry == .tooLate)
        let inTime = transfer(results, timeout: .seconds(2), waited: .milliseconds(1_500))
        inTime.taken()
        #expect(inTime.willSend(localPort: 1) == Int32(CURL_PREREQFUNC_OK))
        #expect(inTime.isWritten)
        let longWait = transfer(results, timeout: .seconds(60), waited: .seconds(55))
        longWait.taken()
        #expect(longWait.willSend(localPort: 1) == Int32(CURL_PREREQFUNC_OK))
        #expect(results.all.isEmpty, "the loop delivers the result, not the callback")
    }

    /// The reserve for the answer, worked out from when the request was handed over and its deadline.
    @Test func theReserveForTheAnswerIsATenthOfTheTimeAtMostASecond() {
        let start = ContinuousClock.now
        #expect(SendDeadline.lastWrite(submitted: start, deadline: start + .seconds(30)) == start + .seconds(29))
        #expect(
            SendDeadline.lastWrite(submitted: start, deadline: start + .seconds(2)) == start + .milliseconds(1_800))
        #expect(
            SendDeadline.lastWrite(submitted: start, deadline: start + .milliseconds(100))
                == start + .milliseconds(90))
        #expect(SendDeadline.lastWrite(submitted: start, deadline: start) == start)
        #expect(SendDeadline.lastWrite(submitted: start, deadline: start - .seconds(1)) == start - .seconds(1))
    }

    @Test func aWarmUpNeverWritesARequest() {
        let results = Results()
        let warmUp = transfer(results, warmUp: true)
        warmUp.taken()
        _ = warmUp.willSend(localPort: 1)
        #expect(warmUp.retry == .notHTTP2, "no easy handle: no HTTP/2 to warm")
        #expect(warmUp.life == .queued)
        #expect(warmUp.delivery == .notSent)
        warmUp.resumeWarmedUp()
        warmUp.resumeWarmedUp()
        #expect(warmUp.life == .finished)
        #expect(results.all == ["warm"])
    }

    /// A transfer's timeout for libcurl is its remaining time in whole milliseconds, rounded up (a
    /// positive time never becomes 0, "no timeout"), saturating instead of trapping; a send's
    /// duration for metrics is whole nanoseconds, saturating too.
    @Test func durationsBecomeLibcurlMillisecondsAndMetricsNanoseconds() {
        #expect(Duration.zero.millisecondsRoundedUp == 0)
        #expect(Duration.nanoseconds(-5).millisecondsRoundedUp == 0)
        #expect(Duration.nanoseconds(1).millisecondsRoundedUp == 1)
        #expect(Duration.milliseconds(250).millisecondsRoundedUp == 250)
        #expect((Duration.milliseconds(250) + .nanoseconds(1)).millisecondsRoundedUp == 251)
        #expect(Duration.seconds(86_400).millisecondsRoundedUp == 86_400_000)
        #expect(Duration.seconds(Int64.max).millisecondsRoundedUp == Int.max)
        #expect(Duration.nanoseconds(1_234_567_891).nanoseconds == 1_234_567_891)
        #expect((Duration.nanoseconds(7) + .seconds(1e-10)).nanoseconds == 7)
        #expect(Duration.nanoseconds(-7).nanoseconds == -7)
        #expect(Duration.seconds(Int64.max).nanoseconds == Int64.max)
    }

    /// libcurl's raw header lines become the response's headers: names lowercase (APNs' own kept as
    /// they are, any other lowercased), values trimmed, and a status line starts a new response.
    @Test func headerLinesBecomeTheResponsesHeaders() {
        let transfer = transfer(Results())
        for line in [
            "HTTP/2 503\r\n", "apns-id: stale\r\n", "HTTP/2 200\r\n",
            "apns-id: 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c\r\n", "Apns-Unique-Id:  u-1 \r\n",
            "content-typo: x\r\n", "apns-i: short\r\n", "retry-after:\t5\r\n", "no colon\r\n", "\r\n",
        ] {
            Array(line.utf8).withUnsafeBytes { transfer.receiveHeaderLine($0) }
        }
        #expect(
            transfer.responseHeaders.map { "\($0.name)=\($0.value)" } == [
                "apns-id=7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c", "apns-unique-id=u-1", "content-typo=x",
                "apns-i=short", "retry-after=5",
            ])
    }
}
