import APNs
import Foundation

/// What the mock server shares across connections and threads, behind one lock.
final class ServerState: ValidationContext {
    typealias Scripted = ScriptedRejection

    private struct Mutable {
        /// The requests the server judged (``MockAPNsServer/requests``): read often by tests, so
        /// kept as its own array, handed out without a copy.
        var records: [RecordedRequest] = []
        /// Every request recorded, those a fault dealt with included (the console's list).
        var received: [RecordedRequest] = []
        /// Requests recorded and then cleared: the first of ``received`` is number this + 1.
        var recordsCleared = 0
        var rejections: [String: Scripted] = [:]
        /// Devices made for the console and tests (``MockAPNsServer/makeDevice(bundleID:environment:)``).
        var devices: [MockDevice] = []
        /// The `iat` of the last accepted token per key id (protocol reference, Token authentication: at most one new
        /// token per 20 minutes).
        var lastIssuedAt: [String: Int] = [:]
        /// Tokens whose signature already verified, so each distinct token is checked once.
        var verified: [String: (teamID: String, keyID: String, issuedAt: Int)] = [:]
        /// Broadcast channels per bundle id, in creation order.
        var channels: [String: [(id: String, policy: MessageStoragePolicy)]] = [:]
        var streams = 0
        var connections = 0
        var pings = 0
        var connectionsEndedForErrors = 0
        /// Requests processed (accepted for delivery), by apns-id.
        var processed: [String: Int] = [:]
        var fault: MockAPNsServer.Fault?
        /// The fault applies to connections opened while this is above zero (nil: all of them).
        var faultyConnectionsLeft: Int?
        /// The fault requests answered so far, for ``MockAPNsServer/inject(_:connections:requests:)``.
        var faultyRequestsLeft: Int?
        var faultsApplied = 0
        /// Open connections, for ``MockAPNsServer/goAwayAll()``.
        var open: [ObjectIdentifier: @Sendable () -> Void] = [:]
        /// Requests received whole (their last frame read), answered or not.
        var arrivals = 0
        /// SETTINGS frames clients have acknowledged, on every connection.
        var settingsAcknowledgements = 0
        /// Waits for a number of matching requests (``MockAPNsServer/requests(count:within:where:)``),
        /// of arrivals (``MockAPNsServer/arrivals(count:within:)``) or of acknowledgements
        /// (``MockAPNsServer/settingsAcknowledgements(count:within:)``).
        var waits: [UUID: Wait] = [:]
        /// Waits ended (limit passed, task cancelled) before they began.
        var endedWaits: Set<UUID> = []

        /// Counts one event for the waits `counts` picks (by what they wait for); returns the
        /// continuations of those it completes, to resume outside the lock.
        mutating func advanceWaits(_ counts: (Wait.Event) -> Bool) -> [CheckedContinuation<Bool, Never>] {
            guard !waits.isEmpty else { return [] }
            var done: [CheckedContinuation<Bool, Never>] = []
            for (id, var wait) in waits where counts(wait.event) {
                wait.seen += 1
                if wait.seen >= wait.count {
                    waits.removeValue(forKey: id)
                    done.append(wait.continuation)
                } else {
                    waits[id] = wait
                }
            }
            return done
        }

        /// How many of `event` there have been so far.
        func count(of event: Wait.Event) -> Int {
            switch event {
            case .recorded(let matches): records.count(where: matches)
            case .received(let matches): received.count(where: matches)
            case .arrival: arrivals
            case .settingsAcknowledgement: settingsAcknowledgements
            }
        }
    }

    /// One wait for `count` events of one kind.
    struct Wait {
        enum Event {
            /// A request the server judged that `matches` accepts.
            case recorded(_ matches: @Sendable (RecordedRequest) -> Bool)
            /// A request received, judged or dealt with by a fault, that `matches` accepts.
            case received(_ matches: @Sendable (RecordedRequest) -> Bool)
            /// A request received whole.
            case arrival
            /// A SETTINGS frame acknowledged by a client.
            case settingsAcknowledgement
        }

        let event: Event
        let count: Int
        var seen: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    let configuration: MockAPNsServer.Configuration
    let verifier: TokenVerifier
    private let mutable = Locked(Mutable())

    init(configuration: MockAPNsServer.Configuration) throws {
        self.configuration = configuration
        verifier = try TokenVerifier(keys: configuration.signingKeys)
    }

    var strict: Bool { configuration.strict }
    var allowedBundleIDs: Set<String>? { configuration.allowedBundleIDs }
    var answersWithUniqueID: Bool { configuration.environment == .sandbox }
    var minimumDeviceTokenBytes: Int { configuration.minimumDeviceTokenBytes }
    var keyEnvironment: KeyScope.Environment { configuration.environment == .sandbox ? .sandbox : .production }
    func keyScope(of keyID: String) -> KeyScope? { configuration.keyScopes[keyID] }
    func keysAreRelated(_ first: String, _ second: String) -> Bool {
        configuration.relatedKeys[first] == second || configuration.relatedKeys[second] == first
    }

    func verifyToken(_ authorization: String) -> TokenVerifier.Outcome {
        let now = Int(configuration.clock().timeIntervalSince1970)
        let outcome: TokenVerifier.Outcome
        if let known = mutable.withLock({ $0.verified[authorization] }) {
            // Signature known good; the age still counts from now.
            outcome =
                now - known.issuedAt > Int(ProviderTokenRules.lifetime.components.seconds)
                ? .rejected(.expiredProviderToken)
                : .valid(teamID: known.teamID, keyID: known.keyID, issuedAt: known.issuedAt)
        } else {
            outcome = verifier.verify(authorization: authorization, now: now)
            if case .valid(let teamID, let keyID, let issuedAt) = outcome {
                mutable.withLock { state in
                    if state.verified.count >= 1024 { state.verified.removeAll() }
                    state.verified[authorization] = (teamID, keyID, issuedAt)
                }
            }
        }
        guard case .valid(_, let keyID, let issuedAt) = outcome else { return outcome }
        return mutable.withLock { state in
            if let last = state.lastIssuedAt[keyID], issuedAt != last {
                if let interval = configuration.minimumTokenUpdateInterval, issuedAt > last,
                    issuedAt - last < Int(interval.components.seconds)
                {
                    return .rejected(.tooManyProviderTokenUpdates)
                }
                if issuedAt < last { return outcome }  // an older token still within its hour
            }
            state.lastIssuedAt[keyID] = issuedAt
            return outcome
        }
    }

    func scriptedRejection(for token: String) -> Scripted? {
        mutable.withLock { $0.rejections[token.lowercased()] }
    }

    func script(_ scripted: Scripted?, for token: String) {
        mutable.withLock { $0.rejections[token.lowercased()] = scripted }
    }

    /// Records a request: one the server judged (and counts as a stream it answered), or one a
    /// fault dealt with (``RecordedRequest/fault``), which only the console's list holds.
    func addDevice(_ device: MockDevice) { mutable.withLock { $0.devices.append(device) } }
    var devices: [MockDevice] { mutable.withLock { $0.devices } }
    func markAppRemoved(token: String, at time: Date) {
        mutable.withLock { state in
            for index in state.devices.indices where state.devices[index].token == token {
                state.devices[index].appRemovedAt = time
            }
        }
    }

    func record(_ request: RecordedRequest) {
        let done = mutable.withLock { state -> [CheckedContinuation<Bool, Never>] in
            if request.fault == nil { state.streams += 1 }
            guard configuration.recordsRequests else { return [] }
            if request.fault == nil { state.records.append(request) }
            state.received.append(request)
            return state.advanceWaits { event in
                switch event {
                case .recorded(let matches): request.fault == nil && matches(request)
                case .received(let matches): matches(request)
                case .arrival, .settingsAcknowledgement: false
                }
            }
        }
        done.forEach { $0.resume(returning: true) }
    }

    /// A request has been received whole (before any fault or answer).
    func arrived() {
        let done = mutable.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.arrivals += 1
            return state.advanceWaits { if case .arrival = $0 { true } else { false } }
        }
        done.forEach { $0.resume(returning: true) }
    }

    /// A client acknowledged a SETTINGS frame: what it carried is in effect on its side.
    func settingsAcknowledged() {
        let done = mutable.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.settingsAcknowledgements += 1
            return state.advanceWaits { if case .settingsAcknowledgement = $0 { true } else { false } }
        }
        done.forEach { $0.resume(returning: true) }
    }

    /// Resumes `continuation` with true once there have been `count` of `event`, those before the
    /// call included; at once when there already have.
    func wait(_ id: UUID, for event: Wait.Event, count: Int, continuation: CheckedContinuation<Bool, Never>) {
        let now = mutable.withLock { state -> Bool? in
            if state.endedWaits.remove(id) != nil { return false }
            let seen = state.count(of: event)
            if seen >= count { return true }
            state.waits[id] = Wait(event: event, count: count, seen: seen, continuation: continuation)
            return nil
        }
        if let now { continuation.resume(returning: now) }
    }

    /// Ends a wait with false: at once if it is waiting, as soon as it begins if it has not yet.
    func endWait(_ id: UUID) {
        let waiting = mutable.withLock { state -> Wait? in
            guard let wait = state.waits.removeValue(forKey: id) else {
                state.endedWaits.insert(id)
                return nil
            }
            return wait
        }
        waiting?.continuation.resume(returning: false)
    }

    /// Forgets a wait that has returned (an end that came too late to matter).
    func forgetWait(_ id: UUID) {
        mutable.withLock { _ = $0.endedWaits.remove(id) }
    }

    /// Creates a channel, or returns nil at the configured limit (APNs: 10,000 per app).
    func createChannel(bundleID: String, policy: MessageStoragePolicy) -> String? {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        let id = Data(bytes).base64EncodedString()
        return mutable.withLock { state in
            guard state.channels[bundleID, default: []].count < configuration.maximumChannelsPerApp else { return nil }
            state.channels[bundleID, default: []].append((id, policy))
            return id
        }
    }

    func channelPolicy(bundleID: String, id: String) -> MessageStoragePolicy? {
        mutable.withLock { $0.channels[bundleID]?.first(where: { $0.id == id })?.policy }
    }

    func channelIDs(bundleID: String) -> [String] {
        mutable.withLock { $0.channels[bundleID]?.map(\.id) ?? [] }
    }

    func deleteChannel(bundleID: String, id: String) {
        mutable.withLock { $0.channels[bundleID]?.removeAll(where: { $0.id == id }) }
    }

    /// Counts a connection and returns the fault it gets, if any.
    func connectionOpened() -> MockAPNsServer.Fault? {
        mutable.withLock { state in
            state.connections += 1
            guard let fault = state.fault else { return nil }
            if let left = state.faultyConnectionsLeft {
                guard left > 0 else { return nil }
                state.faultyConnectionsLeft = left - 1
            }
            return fault
        }
    }

    func pingReceived() { mutable.withLock { $0.pings += 1 } }
    func connectionEndedForErrors() { mutable.withLock { $0.connectionsEndedForErrors += 1 } }
    var connectionsEndedForErrorsCount: Int { mutable.withLock { $0.connectionsEndedForErrors } }
    var pingCount: Int { mutable.withLock { $0.pings } }

    func inject(_ fault: MockAPNsServer.Fault?, connections: Int?, requests: Int?) {
        mutable.withLock { state in
            state.fault = fault
            state.faultyConnectionsLeft = connections
            state.faultyRequestsLeft = requests
        }
    }

    /// Whether the next request on a faulty connection still gets the fault (a request budget set
    /// with `inject(_:connections:requests:)` runs down).
    func takeFaultyRequest() -> Bool {
        mutable.withLock { state in
            guard state.fault != nil else { return false }
            if let left = state.faultyRequestsLeft {
                guard left > 0 else { return false }
                state.faultyRequestsLeft = left - 1
            }
            state.faultsApplied += 1
            return true
        }
    }

    func markProcessed(apnsID: String?) {
        guard let apnsID else { return }
        mutable.withLock { $0.processed[apnsID, default: 0] += 1 }
    }

    var faultsApplied: Int { mutable.withLock { $0.faultsApplied } }

    /// Remembers how to send GOAWAY on an open connection, until it closes.
    func register(_ id: ObjectIdentifier, goAway: @escaping @Sendable () -> Void) {
        mutable.withLock { $0.open[id] = goAway }
    }
    func unregister(_ id: ObjectIdentifier) { _ = mutable.withLock { $0.open.removeValue(forKey: id) } }
    func openConnectionGoAways() -> [@Sendable () -> Void] { mutable.withLock { Array($0.open.values) } }
    var openConnectionCount: Int { mutable.withLock { $0.open.count } }

    func clearProcessed() { mutable.withLock { $0.processed.removeAll(keepingCapacity: true) } }

    func processedCount(apnsID: String) -> Int { mutable.withLock { $0.processed[apnsID] ?? 0 } }
    var processed: [String: Int] { mutable.withLock { $0.processed } }

    /// The requests the server judged (``MockAPNsServer/requests``).
    var records: [RecordedRequest] { mutable.withLock { $0.records } }
    /// Every request recorded, those a fault dealt with included.
    var receivedRecords: [RecordedRequest] { mutable.withLock { $0.received } }
    var streamCount: Int { mutable.withLock { $0.streams } }
    var connectionCount: Int { mutable.withLock { $0.connections } }
    func clearRecords() {
        mutable.withLock {
            $0.recordsCleared += $0.received.count
            $0.records.removeAll()
            $0.received.removeAll()
        }
    }
    /// Every record (those a fault dealt with included) with the number of the first (1 for the
    /// first request ever recorded).
    var numberedRecords: (first: Int, records: [RecordedRequest]) {
        mutable.withLock { ($0.recordsCleared + 1, $0.received) }
    }
}
