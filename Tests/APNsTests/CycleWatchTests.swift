@testable import APNs
import Testing

/// The pool's slow-cycle judgement as a value: given the passes' answers, what libcurl held and
/// the time, never a clock or a socket.
@Suite struct CycleWatchTests {
    let start = ContinuousClock.now

    /// Runs `passes` passes 100 ms apart after `from` passes, each reading `answers` answers, the
    /// fastest `fastest` after its write, with `busy` of 1,000 streams held; the changes they made.
    func run(
        _ watch: inout CycleWatch, from: Int = 0, passes: Int = 10, answers: Int,
        fastest: Duration = .milliseconds(100),
        busy: Int = 1000
    ) -> [CycleWatch.Change] {
        var changes: [CycleWatch.Change] = []
        for pass in from..<(from + passes) {
            let at = start + .milliseconds(100) * pass
            if let change = watch.pass(answers: answers, fastest: fastest, busy: busy, limit: 1000, at: at) {
                changes.append(change)
            }
        }
        return changes
    }

    @Test func everyStreamBusyAndACycleOfOnePointThreeRoundTripsIsSlow() throws {
        var watch = CycleWatch()
        // 1,000 streams, 100 ms round trip: 10,000 a second at best; 7,700 is a 130 ms cycle.
        let changes = run(&watch, passes: 21, answers: 770)
        let judgement = try #require(changes.first.flatMap { if case .slow(let j) = $0 { j } else { nil } })
        #expect(changes.count == 1)
        #expect(judgement.roundTrip == .milliseconds(100))
        #expect(judgement.streams == 1000)
        #expect(judgement.limit == 1000)
        #expect(abs(judgement.rate - 7_700) < 1)
        #expect(abs(judgement.bound - 10_000) < 1)
        #expect(judgement.cycle > .milliseconds(129) && judgement.cycle < .milliseconds(131))
        #expect(watch.isSlow)
    }

    /// A stream empty on the client, waiting for its next request, is part of its cycle: nine
    /// tenths of the streams busy, each answer after a round trip, still leaves the pool at 0.8 of
    /// its bound.
    @Test func aStreamEmptyOnTheClientCountsInItsCycle() throws {
        var watch = CycleWatch()
        let changes = run(&watch, passes: 21, answers: 800, busy: 900)
        let judgement = try #require(changes.first.flatMap { if case .slow(let j) = $0 { j } else { nil } })
        #expect(abs(judgement.streams - 900) < 0.001)
        #expect(judgement.cycle > .milliseconds(124) && judgement.cycle < .milliseconds(126))
        #expect(abs(judgement.bound - 10_000) < 1)
    }

    /// One slow window alone (a clump of late answers, a burst's first round trip) is no spell.
    @Test func oneSlowWindowAloneIsNoSpell() {
        var watch = CycleWatch()
        var changes = run(&watch, passes: 11, answers: 950)
        changes += run(&watch, from: 11, passes: 10, answers: 700)
        changes += run(&watch, from: 21, passes: 10, answers: 950)
        changes += run(&watch, from: 31, passes: 10, answers: 700)
        #expect(changes.isEmpty)
        #expect(!watch.isSlow)
    }

    @Test func aCycleWithinOnePointOneRoundTripsIsNotSlow() {
        var watch = CycleWatch()
        // 9,200 a second: a 109 ms cycle.
        #expect(run(&watch, passes: 31, answers: 920).isEmpty)
        #expect(!watch.isSlow)
    }

    @Test func streamsToSpareAreNotJudgedAndEndASlowSpell() {
        var watch = CycleWatch()
        #expect(run(&watch, passes: 21, answers: 770).count == 1)
        // Four fifths of the streams busy, however slowly they turn: the pool has room, so no advice.
        #expect(run(&watch, from: 21, passes: 10, answers: 300, busy: 800) == [.recovered])
        #expect(run(&watch, from: 31, passes: 20, answers: 300, busy: 800).isEmpty)
        #expect(!watch.isSlow)
    }

    @Test func aSlowSpellIsSaidOnceAndAgainAfterItEnded() {
        var watch = CycleWatch()
        var changes = run(&watch, passes: 51, answers: 770)
        changes += run(&watch, from: 51, passes: 20, answers: 950)
        changes += run(&watch, from: 71, passes: 20, answers: 770)
        #expect(run(&watch, from: 91, passes: 10, answers: 770).isEmpty)  // still the same spell
        #expect(changes.count == 3)
        guard changes.count == 3 else { return }
        if case .slow = changes[0] {} else { Issue.record("expected a slow spell first: \(changes)") }
        #expect(changes[1] == .recovered)
        if case .slow = changes[2] {} else { Issue.record("expected a second slow spell: \(changes)") }
    }

    /// The round trip is the fastest answer of the recent windows: one slow window's answers do not
    /// raise it, so a server answering late throughout is still judged against its best.
    @Test func theRoundTripIsTheFastestAnswerOfRecentWindows() {
        var watch = CycleWatch()
        #expect(run(&watch, passes: 11, answers: 950).isEmpty)
        let changes = run(&watch, from: 11, passes: 20, answers: 770, fastest: .milliseconds(125))
        guard case .slow(let judgement)? = changes.first else {
            Issue.record("expected a slow spell: \(changes)")
            return
        }
        #expect(judgement.roundTrip == .milliseconds(100))
    }

    /// Close to APNs a pass of the loop is most of a round trip: nothing is judged.
    @Test func nothingIsJudgedUnderTenMilliseconds() {
        var watch = CycleWatch()
        // 5 ms round trip, every stream busy, a 10 ms cycle.
        #expect(run(&watch, passes: 31, answers: 10_000, fastest: .milliseconds(5)).isEmpty)
    }

    @Test func aPassWithoutAnswersNorBusyStreamsJudgesNothing() {
        var watch = CycleWatch()
        #expect(run(&watch, passes: 31, answers: 0, busy: 0).isEmpty)
    }
}
