@testable import APNs
import Testing

/// The transport's thread rule, checked: libcurl's handles and the loop's state are touched only on
/// the loop thread, and debug builds (every test run) trap when a loop-thread function runs
/// anywhere else. The rest of the suite runs every such function on the loop thread with the check
/// on, so a send path that strayed would fail there.
@Suite struct LoopThreadTests {
    /// A loop whose thread has not started (it starts with the first operation).
    static func loop() throws -> CurlMultiLoop {
        try CurlMultiLoop(
            settings: .init(
                connectTimeoutMilliseconds: 1000, maximumIdleSeconds: 60, tcpKeepAliveSeconds: nil,
                circuitBreaker: nil, trustedCA: nil, identity: nil, observability: .disabled, reportsGoAway: false),
            maximumConnectionsPerHost: 1, maximumConcurrentStreams: 1)
    }

    #if DEBUG
        @Test func aLoopThreadFunctionCalledElsewhereTraps() async {
            await #expect(processExitsWith: .failure) {
                let loop = try LoopThreadTests.loop()
                loop.trimIdleHandles(now: .now)  // on the test's thread, not the loop's
            }
        }

        @Test func theCheckPassesOnTheLoopThread() async throws {
            let loop = try LoopThreadTests.loop()
            // A task that prefers the loop runs on its thread: the same call is allowed there.
            let ran = await Task(executorPreference: loop) { () -> Bool in
                loop.trimIdleHandles(now: .now)
                return true
            }.value
            #expect(ran)
            await loop.shutdown(gracePeriod: .zero)
        }
    #endif
}
