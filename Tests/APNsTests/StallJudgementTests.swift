@testable import APNs
import Foundation
import Testing

/// The stall judgement as the value it is, given instants and the evidence, with no socket or wait;
/// and what the loop reads for it: bytes the server sent that this process has not read yet mean
/// the connection is alive and the loop is behind (a busy machine). (ServerBehaviourTests and the
/// fault matrix drive the same judgement through libcurl.)
@Suite struct StallJudgementTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int((seconds * 1000).rounded())) }

    /// A request given to the transport at 0 that timed out at 10 s: silence means 9 s.
    var judgement: StallJudgement { StallJudgement(submittedAt: at(0), now: at(10)) }

    @Test func silenceIsNearlyAllOfTheRequestsWholeWait() {
        #expect(judgement.silence == .seconds(9))
        #expect(StallJudgement(submittedAt: at(5), now: at(6)).silence == .milliseconds(900))
    }

    @Test func anAnswerWithinTheSilenceMeansAlive() {
        #expect(
            judgement.verdict(now: at(10), lastAnswer: at(1.001), unreadBytes: 0, sinceDataReceived: nil)
                == .answeredRecently)
        #expect(
            judgement.verdict(now: at(10), lastAnswer: at(1), unreadBytes: 0, sinceDataReceived: nil)
                != .answeredRecently)
        #expect(
            judgement.verdict(now: at(10), lastAnswer: nil, unreadBytes: 0, sinceDataReceived: nil) != .answeredRecently
        )
        #expect(
            judgement.verdict(now: at(10), lastAnswer: at(2), unreadBytes: 0, sinceDataReceived: nil)
                == .answeredRecently)
    }

    @Test func unreadBytesOrDataTheKernelReceivedMeanAlive() {
        #expect(
            judgement.verdict(now: at(10), lastAnswer: nil, unreadBytes: 9, sinceDataReceived: .seconds(60))
                == .unreadBytesWaiting)
        #expect(
            judgement.verdict(now: at(10), lastAnswer: at(0), unreadBytes: 0, sinceDataReceived: .seconds(8))
                == .receivedRecently)
    }

    /// Nothing read, nothing waiting, nothing received within 9 s — or no kernel timing where the
    /// system cannot tell — is a stall.
    @Test func nothingWithinTheSilenceIsAStall() {
        #expect(
            judgement.verdict(now: at(10), lastAnswer: at(0.5), unreadBytes: 0, sinceDataReceived: .seconds(9))
                == .stalled)
        #expect(judgement.verdict(now: at(10), lastAnswer: nil, unreadBytes: 0, sinceDataReceived: nil) == .stalled)
    }

    @Test func unreadBytesOnASocketAreCounted() throws {
        var pair: [Int32] = [0, 0]
        #if os(Linux)
            let stream = Int32(SOCK_STREAM.rawValue)
        #else
            let stream = SOCK_STREAM
        #endif
        try #require(socketpair(AF_UNIX, stream, 0, &pair) == 0)
        defer {
            close(pair[0])
            close(pair[1])
        }
        let loop = try LoopThreadTests.loop()
        #expect(loop.unreadBytes(on: pair[0]) == 0)
        let bytes: [UInt8] = Array("HTTP/2 frames".utf8)
        #expect(write(pair[1], bytes, bytes.count) == bytes.count)
        #expect(loop.unreadBytes(on: pair[0]) == Int32(bytes.count))
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(read(pair[0], &buffer, buffer.count) == bytes.count)
        #expect(loop.unreadBytes(on: pair[0]) == 0)
        #expect(loop.unreadBytes(on: -1) == 0)  // not a socket: cannot tell, so no evidence of life
    }
}
