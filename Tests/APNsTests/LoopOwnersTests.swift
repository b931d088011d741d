@testable import APNs
import Foundation
import Testing

/// The transport loop's owners as the values they are — the waiting queue, a transfer's deadline,
/// keep-warm's state, the connection table — given instants and events, without libcurl, a socket
/// or a wait. The fault matrix, the deadline, keep-warm and GOAWAY suites drive the same owners
/// through libcurl.
@Suite struct LoopOwnersTests {
    let start = ContinuousClock.now
    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    /// A transfer handed over at `start`, with `timeout` in all.
    func transfer(timeout: Duration = .seconds(10), warmUp: Bool = false) -> Transfer {
        let transfer = Transfer(
            origin: "https://127.0.0.1:1", path: "/3/device/", pathSuffix: "ab", pathIsPlain: true, method: .post,
            headerList: CurlMultiLoop.noHeaders, body: CurlMultiLoop.noBody, deadline: start + timeout,
            submittedAt: start, clock: ContinuousWaitClock.shared, isWarmUp: warmUp)
        transfer.completion = .callback { _, _ in }
        return transfer
    }

    // MARK: A transfer's deadline

    @Test func theDeadlineVerdictIsOneJudgementOfTheTime() {
        let time = TransferDeadline(submittedAt: at(0), deadline: at(10_000))
        // The last second (a tenth of the time, at most a second) is kept for the answer.
        #expect(time.lastWrite == at(9_000))
        #expect(time.verdict(at: at(0)) == .writable(remaining: .seconds(10)))
        #expect(time.verdict(at: at(8_999)) == .writable(remaining: .milliseconds(1_001)))
        #expect(time.verdict(at: at(9_000)) == .tooLateToWrite(remaining: .seconds(1)))
        #expect(time.verdict(at: at(10_000)) == .passed)
        #expect(time.verdict(at: at(20_000)) == .passed)
        // In libcurl: a little past the deadline, longer for a request that was written.
        #expect(!time.isOverdueInLibcurl(at: at(10_099), written: false))
        #expect(time.isOverdueInLibcurl(at: at(10_100), written: false))
        #expect(!time.isOverdueInLibcurl(at: at(10_499), written: true))
        #expect(time.isOverdueInLibcurl(at: at(10_500), written: true))
        // A send with no time left is too late to write from the start.
        let spent = TransferDeadline(submittedAt: at(0), deadline: at(0))
        #expect(spent.verdict(at: at(0)) == .passed)
    }

    // MARK: The waiting queue

    @Test func theQueueHandsOutInOrderPassingOverFinishedTransfers() {
        let queue = WaitingQueue(startingAt: at(0))
        #expect(queue.isEmpty && queue.next() == nil)
        let (first, finished, last) = (transfer(), transfer(), transfer())
        for transfer in [first, finished, last] { queue.append(transfer) }
        #expect(queue.count == 3)
        finished.resume(.failure(TransportError.cancelled(delivery: .notSent)))
        #expect(queue.next() === first)
        #expect(queue.next() === last, "a finished transfer is passed over")
        #expect(queue.next() == nil && queue.isEmpty)
        queue.compact()
        #expect(queue.count == 0 && queue.waiting.isEmpty)
    }

    @Test func theQueueSweepsExpiredTransfersOncePerInterval() {
        let queue = WaitingQueue(startingAt: at(0))
        let short = transfer(timeout: .milliseconds(100))
        let shorter = transfer(timeout: .milliseconds(120))
        let long = transfer(timeout: .seconds(10))
        for transfer in [short, shorter, long] { queue.append(transfer) }
        #expect(queue.expired(at: at(10)).isEmpty, "nothing has passed its deadline")
        let expired = queue.expired(at: at(100))
        #expect(expired.count == 1 && expired.first === short)
        short.resume(.failure(TransportError.timedOut(delivery: .notSent)))
        // Swept at 100 ms: not again before 150 ms, though another deadline passed at 120 ms.
        #expect(queue.expired(at: at(130)).isEmpty)
        let later = queue.expired(at: at(150))
        #expect(later.count == 1 && later.first === shorter)
        shorter.resume(.failure(TransportError.timedOut(delivery: .notSent)))
        #expect(queue.count == 3, "the loop fails them; they stay until passed over")
        #expect(queue.next() === long)
        queue.compact()
        #expect(queue.isEmpty)
    }

    @Test func stoppingEmptiesTheQueueAndReturnsWhatWaited() {
        let queue = WaitingQueue(startingAt: at(0))
        let (taken, waiting) = (transfer(), transfer())
        queue.append(taken)
        queue.append(waiting)
        #expect(queue.next() === taken)
        let left = queue.removeAll()
        #expect(left.count == 1 && left.first === waiting)
        #expect(queue.isEmpty && queue.count == 0)
    }

    // MARK: Keep-warm

    @Test func keepWarmStartsAWarmUpOnlyWhenAskedIdleAndDue() {
        let keepWarm = KeepWarm(startingAt: at(0))
        func due(_ milliseconds: Int, busy: Bool = false, awaiting: Bool = true) -> KeepWarmSchedule.Reason? {
            keepWarm.warmUpDue(
                at: at(milliseconds), busy: busy, maximumIdle: .seconds(15), awaitingConnection: awaiting)?.reason
        }
        #expect(due(0) == nil, "not asked to keep warm")
        #expect(keepWarm.sleepPlan(at: at(0), running: true, busy: false) == (nil, false))
        keepWarm.keep(origin: "https://api.push.apple.com:443")
        #expect(due(0, busy: true) == nil, "a send in flight touches the connection itself")
        #expect(due(0) == .noConnection)
        let warmUp = transfer(warmUp: true)
        keepWarm.started(warmUp)
        #expect(due(10) == nil, "one warm-up at a time")
        #expect(keepWarm.ended(nil, at: at(20), jitter: 1) == nil)
        #expect(keepWarm.warmUp == nil && keepWarm.lastActivity == at(20))
        // Connected: the next only after its spacing, and only for a reason.
        #expect(due(100, awaiting: false) == nil)
        #expect(keepWarm.sleepPlan(at: at(100), running: true, busy: false).wakeBy == at(270))
        keepWarm.idleConnectionStirred()
        #expect(keepWarm.sleepPlan(at: at(300), running: true, busy: false) == (nil, true))
        #expect(due(300, awaiting: false) == .stirred)
        #expect(!keepWarm.stirred, "the stir is answered by the warm-up")
        keepWarm.started(transfer(warmUp: true))
        let failed = keepWarm.ended(
            TransportError(kind: .connect, delivery: .notSent, message: "refused"), at: at(400), jitter: 1)
        #expect(failed?.delay == .seconds(1) && failed?.failures == 1)
        #expect(due(1_399) == nil && due(1_400) == .noConnection, "after the back-off")
        // A cancelled warm-up (a drain) schedules nothing.
        keepWarm.started(transfer(warmUp: true))
        #expect(keepWarm.ended(TransportError.cancelled(delivery: .notSent), at: at(1_500), jitter: 1) == nil)
        #expect(keepWarm.sleepPlan(at: at(1_500), running: false, busy: false) == (nil, false), "draining")
    }

    // MARK: Connections

    @Test func theConnectionTableKnowsWhenTheNextRequestMakesAConnection() {
        let table = ConnectionTable(connectionsPerHost: 1, streamsPerConnection: 1_000)
        #expect(table.awaitingConnection)
        let (first, second) = (transfer(), transfer())
        #expect(table.makesAwaitedConnection(first))
        #expect(!table.makesAwaitedConnection(second), "the others wait for that connection")
        first.resume(.failure(TransportError.timedOut(delivery: .notSent)))
        #expect(table.makesAwaitedConnection(second), "it ended without one: the next makes it")
        table.opened(7)
        table.established()
        #expect(!table.awaitingConnection && !table.makesAwaitedConnection(transfer()))
        table.receivedGoAway()
        #expect(table.awaitingConnection)
        table.established()
        table.answered(onPort: 5_000, at: at(10))
        #expect(table.lastAnswer(onPort: 5_000) == at(10))
        table.shutDownAsStalled(port: 5_000)
        #expect(table.isStalled(port: 5_000) && table.awaitingConnection)
        #expect(table.closed(7, port: 5_000))
        #expect(!table.isStalled(port: 5_000) && table.lastAnswer(onPort: 5_000) == nil)
        #expect(!table.closed(7, port: 5_000), "closed once")
    }

    @Test func aConnectionTiedToAnotherKeyClosesOnceItsRequestsAreAnswered() {
        let table = ConnectionTable(connectionsPerHost: 1, streamsPerConnection: 1_000)
        table.opened(7)
        table.established()
        #expect(table.retire(port: 5_000))
        #expect(!table.retire(port: 5_000), "retired once")
        #expect(table.isStalled(port: 5_000), "nothing more is written to it")
        #expect(table.retirable { $0 == 5_000 }.isEmpty, "a written request still waits on it")
        #expect(table.retiring == [5_000])
        #expect(table.retirable { _ in false } == [5_000])
        #expect(table.retiring.isEmpty)
        table.closingRetired()
        #expect(table.awaitingConnection)
    }

    @Test func aPoolsStreamLimitFollowsTheDemandAndFallsOnlyWhenLibcurlIsIdle() {
        let table = ConnectionTable(connectionsPerHost: 4, streamsPerConnection: 1_000)
        #expect(table.streamLimit == 1_000)
        #expect(table.streamLimit(forDemand: 500, libcurlIdle: false) == nil, "lowered only while idle")
        #expect(table.streamLimit(forDemand: 500, libcurlIdle: true) == 125)
        #expect(table.streamLimit(forDemand: 10, libcurlIdle: false) == nil)
        #expect(table.streamLimit(forDemand: 2_000, libcurlIdle: false) == 500, "raised at once")
        #expect(table.streamLimit(forDemand: 0, libcurlIdle: true) == 1, "at least one stream")
        #expect(table.streamLimit(forDemand: 10_000, libcurlIdle: false) == 1_000, "at most the configured streams")
    }

    /// A pool that grows and shrinks (``PoolGrowth``, held by the table): its size and what it
    /// carries at once follow the slow spell and the demand, the share follows its size, back at
    /// one its connection has every stream again, the newest socket is the one to retire, and
    /// retiring one of several leaves the next request to the others.
    @Test func aPoolThatGrowsAndShrinksKeepsItsLimitsAndItsOtherConnections() {
        let start = ContinuousClock.now
        let table = ConnectionTable(
            connectionsPerHost: 1, streamsPerConnection: 1_000, additionalWhenSlow: 1,
            timing: .init(retireAfter: .seconds(10), regrowAfter: .seconds(60)))
        #expect(table.streamsInPool == 1_000)
        #expect(table.mostStreamsInPool == 2_000)
        table.opened(7)
        table.established()
        #expect(
            table.slowSpellBegan(at: start) == .init(connections: 2, streamLimit: nil),
            "a connection's limit is unchanged until the demand says")
        #expect(table.connectionsPerHost == 2)
        #expect(table.streamsInPool == 2_000)
        #expect(table.slowSpellBegan(at: start + .seconds(1)) == nil, "no more than the additional one")
        #expect(table.streamLimit(forDemand: 1_200, libcurlIdle: true) == 600)
        table.opened(9)
        table.opened(8)
        #expect(table.socketsInOrder == [7, 9, 8], "the newest last")
        #expect(table.passed(demand: 900, at: start + .seconds(2)) == nil, "fits one fewer from here")
        #expect(table.passed(demand: 900, at: start + .seconds(12)) == .init(connections: 1, streamLimit: 1_000))
        #expect(table.streamsInPool == 1_000)
        #expect(table.streamLimit == 1_000, "one connection is never limited to a share")
        #expect(table.retire(port: 5_002))
        #expect(table.retirable { _ in false } == [5_002])
        table.closingRetired(othersLeft: true)
        #expect(!table.awaitingConnection, "the connection left carries the next request")
        #expect(table.closed(8, port: 5_002))
        #expect(table.socketsInOrder == [7, 9])
        #expect(table.passed(demand: 0, at: start + .seconds(30)) == nil, "never below the configured pool")
    }

    // MARK: Easy handles

    /// Stand-ins for easy handles: distinct addresses no call dereferences.
    func handles(_ count: Int) -> [UnsafeMutableRawPointer] {
        (1...count).compactMap { UnsafeMutableRawPointer(bitPattern: $0 * 64) }
    }

    @Test func thePoolKeepsFinishedHandlesAndTrimsThoseBeyondTheRecentNeed() throws {
        let pool = HandlePool(startingAt: at(0))
        let easy = handles(4)
        for handle in easy { pool.started(transfer(), on: handle) }
        #expect(pool.count == 4 && !pool.isEmpty)
        #expect(pool.transfer(on: easy[0]) != nil)
        for handle in easy { #expect(pool.ended(handle) != nil && pool.keep(handle)) }
        #expect(pool.ended(easy[0]) == nil, "ended once")
        #expect(pool.isEmpty && pool.idleCount == 4)
        // Four were in use at once: the first trim keeps them all, and counts the need anew.
        #expect(pool.excessIdle(at: at(0)).isEmpty)
        #expect(pool.excessIdle(at: at(1_000)).isEmpty, "once per interval")
        let reused = try #require(pool.takeIdle())
        #expect(reused == easy[3], "the most recently finished first")
        let again = try #require(pool.takeIdle())
        pool.started(transfer(), on: reused)
        pool.started(transfer(), on: again)
        #expect(pool.ended(again) != nil && pool.keep(again))
        // Two in use at most since the last trim, one now: of the three idle, the two oldest go.
        #expect(pool.excessIdle(at: at(30_000)) == [easy[0], easy[1]])
        #expect(pool.idleCount == 1)
        let (active, idle) = pool.removeAll()
        #expect(active.count == 1 && idle == [easy[2]])
        #expect(pool.isEmpty && pool.idleCount == 0)
    }

    // MARK: libcurl's sockets

    @Test func theSocketWatchRunsWhatIsDueAndEveryTransferOnlyOnNews() {
        let watch = SocketWatch(everyTransferInterval: .milliseconds(100), startingAt: at(0))
        watch.libcurlWatches(7, events: Int16(POLLIN), remove: false)
        #expect(watch.watched == [7: Int16(POLLIN)])
        watch.libcurlTimer(0, at: at(0))
        #expect(watch.takeTimer(at: at(0)) && !watch.takeTimer(at: at(0)), "a timer is spent once run")
        watch.libcurlTimer(20, at: at(0))
        #expect(!watch.takeTimer(at: at(10)) && watch.takeTimer(at: at(20)))
        watch.libcurlTimer(-1, at: at(30))
        #expect(watch.timerDue == nil)
        // Nothing ready: no news; a closed connection is news until every transfer has run.
        #expect(!watch.takeNews(ranDue: true) { _ in true })
        watch.connectionClosed()
        #expect(watch.takeNews(ranDue: false) { _ in false })
        #expect(watch.runsEveryTransfer(news: true, busy: false, at: at(40)))
        #expect(!watch.takeNews(ranDue: false) { _ in true }, "answered")
        // Every transfer also runs once per interval while any is in flight.
        #expect(watch.runsEveryTransfer(news: false, busy: true, at: at(50)))
        #expect(!watch.runsEveryTransfer(news: false, busy: true, at: at(100)))
        #expect(!watch.runsEveryTransfer(news: false, busy: false, at: at(200)))
        // A sleep that finds the pipe and socket 7 readable, and socket 9 (idle, keep-warm's).
        let count = watch.withPollSet(wake: 3, idle: [9]) { set -> Int in
            #expect(set.map(\.fd) == [3, 7, 9])
            for index in set.indices { set[index].revents = Int16(POLLIN) }
            return set.count
        }
        #expect(count == 3)
        let (woken, stirred) = watch.polled { $0 == 9 }
        #expect(woken && stirred)
        // Socket 7 is ready: after the due transfers ran it is news only if still readable.
        #expect(!watch.takeNews(ranDue: true) { _ in false })
        watch.withPollSet(wake: 3, idle: nil) { set in set[1].revents = Int16(POLLIN) }
        _ = watch.polled { _ in false }
        #expect(watch.takeNews(ranDue: false) { _ in false }, "without a due run, any ready socket is news")
        watch.libcurlWatches(7, events: 0, remove: true)
        #expect(watch.watched.isEmpty)
    }
}
