/// How one claim shares its limit between the apps with work, so that no app's backlog holds up
/// another's: in rounds, each app still in gets an equal share of what is left (at least one
/// device-send), and an app that takes less than its share (it had no more due) is out of the
/// next round, its rest going to those that filled theirs. An app with a new notification is
/// therefore served by the next claim, whatever another app has queued.
///
/// The apps start each claim at a random place in their order: when the apps outnumber what is
/// left (a share of one each, not all served), a claim serves a different subset each time
/// instead of always the first in the alphabet.
///
/// Both stores follow it: SQLite one app at a time, PostgreSQL one statement per round. A value
/// with no I/O, tested on its own (`FairSharesTests`).
struct FairShares {
    /// Device-sends the claim may still take.
    private(set) var remaining: Int
    /// The apps in the next round, in the order they are served.
    private(set) var apps: [String]

    init(limit: Int, apps: [String], start: Int? = nil) {
        remaining = max(0, limit)
        guard !apps.isEmpty else {
            self.apps = []
            return
        }
        let offset = (start ?? Int.random(in: 0..<apps.count)) % apps.count
        self.apps = Array(apps[offset...] + apps[..<offset])
    }

    /// The next round's apps and each one's share; nil when the claim is done.
    var nextRound: (apps: [String], share: Int)? {
        guard remaining > 0, !apps.isEmpty else { return nil }
        return (apps, max(1, remaining / apps.count))
    }

    /// Records what each app of the round took: those that filled their share stay in.
    mutating func finishRound(share: Int, taken: [String: Int]) {
        remaining -= taken.values.reduce(0, +)
        apps = apps.filter { (taken[$0] ?? 0) >= share }
    }

    /// Runs every round, app by app: `take(app, count)` takes up to `count` of the app's due
    /// device-sends and returns how many it took. No round takes more than ``remaining``.
    mutating func takeAll(_ take: (String, Int) throws -> Int) rethrows {
        while let round = nextRound {
            var taken: [String: Int] = [:]
            var left = remaining
            for app in round.apps where left > 0 {
                let count = try take(app, min(round.share, left))
                taken[app] = count
                left -= count
            }
            finishRound(share: round.share, taken: taken)
        }
    }
}
