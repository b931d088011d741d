@testable import APNs
import Testing

/// Keep-warm's schedule as the value it is: when a warm-up is due, its spacing, and the back-off
/// after failures, given instants and no connection or wait. (KeepWarmTests drives the same
/// schedule through libcurl.) The one clock read is the origin the instants are counted from.
@Suite struct KeepWarmScheduleTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int((seconds * 1000).rounded())) }

    func isDue(
        _ schedule: KeepWarmSchedule, _ now: Double, lastActivity: Double = 0, awaiting: Bool = false,
        stirred: Bool = false
    ) -> Bool {
        schedule.isDue(
            now: at(now), lastActivity: at(lastActivity), maximumIdle: .seconds(118), awaitingConnection: awaiting,
            stirred: stirred)
    }

    @Test func aWarmUpIsDueOnlyWhenAConnectionIsWantedStirredOrAboutToBeTooOld() {
        let schedule = KeepWarmSchedule(startingAt: at(0))
        #expect(isDue(schedule, 0, awaiting: true))
        #expect(isDue(schedule, 0, stirred: true))
        #expect(!isDue(schedule, 0))
        // libcurl's 118 s, and two more: replaced at 120 s of idleness, not before.
        #expect(!isDue(schedule, 120, lastActivity: 0))
        #expect(isDue(schedule, 120.001, lastActivity: 0))
        #expect(!isDue(schedule, 200, lastActivity: 100))
    }

    /// An idle connection too old to reuse is replaced once; the replacement, idle as long in
    /// turn, is not, until a send ends the idle period.
    @Test func anIdleConnectionIsReplacedOncePerIdlePeriod() {
        var schedule = KeepWarmSchedule(startingAt: at(0))
        let reason = { (schedule: KeepWarmSchedule, now: Double, lastActivity: Double) in
            schedule.reason(
                now: self.at(now), lastActivity: self.at(lastActivity), maximumIdle: .seconds(15),
                awaitingConnection: false, stirred: false)
        }
        #expect(reason(schedule, 17, 0) == nil)
        #expect(reason(schedule, 17.001, 0) == .idleTooLong)
        schedule.starting(for: .idleTooLong)
        schedule.succeeded(at: at(17.1))
        #expect(schedule.replacedWhileIdle)
        #expect(reason(schedule, 100, 17.1) == nil)
        #expect(reason(schedule, 10_000, 17.1) == nil)
        // What the connection's own events ask for still happens.
        #expect(
            schedule.reason(
                now: at(100), lastActivity: at(17.1), maximumIdle: .seconds(15), awaitingConnection: false,
                stirred: true) == .stirred)
        schedule.sendStarted()
        #expect(!schedule.replacedWhileIdle)
        #expect(reason(schedule, 200, 150) == .idleTooLong)
        // A warm-up for another reason is no replacement of an idle connection.
        schedule.starting(for: .stirred)
        #expect(!schedule.replacedWhileIdle)
    }

    @Test func successfulWarmUpsAreSpaced() {
        var schedule = KeepWarmSchedule(startingAt: at(0))
        schedule.succeeded(at: at(10))
        #expect(schedule.notBefore == at(10) + KeepWarmSchedule.spacing)
        #expect(!isDue(schedule, 10.2, stirred: true))
        #expect(isDue(schedule, 10.25, stirred: true))
    }

    /// One second after the first failure, doubling up to a minute, each times its jitter; a
    /// success forgets the failures.
    @Test func failuresBackOffExponentiallyUpToAMinute() {
        var schedule = KeepWarmSchedule(startingAt: at(0))
        var delays: [Duration] = []
        for _ in 0..<9 { delays.append(schedule.failed(at: at(0), jitter: 1)) }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
        #expect(schedule.failures == 9)
        #expect(schedule.notBefore == at(60))
        #expect(!isDue(schedule, 59.9, awaiting: true))
        #expect(isDue(schedule, 60, awaiting: true))
        #expect(schedule.failed(at: at(100), jitter: 0.8) == .seconds(48))
        #expect(schedule.notBefore == at(148))
        schedule.succeeded(at: at(150))
        #expect(schedule.failures == 0)
        #expect(schedule.failed(at: at(151), jitter: 1.2) == .milliseconds(1200))
    }
}
