import APNsCore
import Foundation
import Synchronization

/// What the mock server shares across connections and threads, behind one lock.
final class ServerState: Sendable {
    struct Scripted: Sendable {
        var status: Int
        var reason: APNsRejection.Reason
        var timestamp: Int64?
    }

    private struct Mutable {
        var records: [RecordedRequest] = []
        var rejections: [String: Scripted] = [:]
        /// The `iat` of the last accepted token per key id (APNs reference §7: at most one new
        /// token per 20 minutes).
        var lastIssuedAt: [String: Int] = [:]
        /// Tokens whose signature already verified, so each distinct token is checked once.
        var verified: [String: (teamID: String, keyID: String, issuedAt: Int)] = [:]
        var streams = 0
        var connections = 0
    }

    let configuration: MockAPNsServer.Configuration
    let verifier: TokenVerifier
    private let mutable = Mutex(Mutable())

    init(configuration: MockAPNsServer.Configuration) throws {
        self.configuration = configuration
        verifier = try TokenVerifier(keys: configuration.signingKeys)
    }

    func verifyToken(_ authorization: String) -> TokenVerifier.Outcome {
        let now = Int(configuration.clock().timeIntervalSince1970)
        let outcome: TokenVerifier.Outcome
        if let known = mutable.withLock({ $0.verified[authorization] }) {
            // Signature known good; the age still counts from now.
            outcome = now - known.issuedAt > 3600
                ? .rejected(.expiredProviderToken) : .valid(teamID: known.teamID, keyID: known.keyID, issuedAt: known.issuedAt)
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
                if issuedAt > last && issuedAt - last < 20 * 60 { return .rejected(.tooManyProviderTokenUpdates) }
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

    func record(_ request: RecordedRequest) {
        mutable.withLock { state in
            state.streams += 1
            if configuration.recordsRequests { state.records.append(request) }
        }
    }

    func connectionOpened() { mutable.withLock { $0.connections += 1 } }

    var records: [RecordedRequest] { mutable.withLock { $0.records } }
    var streamCount: Int { mutable.withLock { $0.streams } }
    var connectionCount: Int { mutable.withLock { $0.connections } }
    func clearRecords() { mutable.withLock { $0.records.removeAll() } }
}
