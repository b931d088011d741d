@testable import APNsGateway
import APNs
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Each app's queue quota and accepted device-sends a second: kept per app by the stores,
/// answered 429 by the API, without touching another app.
@Suite struct AppLimitsTests {
    @Test(arguments: Backend.allCases)
    func anAppsQuotaCountsItsUnfinishedDeviceSendsOnly(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let now = Date()
        try await store.setLimits(of: "com.example.a", maximumQueued: 15, deviceSendsPerSecond: 200)
        #expect(
            try await store.appSettings() == [
                AppSettings(app: "com.example.a", maximumQueued: 15, deviceSendsPerSecond: 200)
            ])
        let first = FairnessTests.notification("a1", app: "com.example.a", devices: 0..<10, at: now)
        #expect(try await store.enqueue(first, maximumQueueDepth: 1_000, maximumAppDepth: 15) == .accepted)
        let second = FairnessTests.notification("a2", app: "com.example.a", devices: 10..<20, at: now)
        #expect(
            try await store.enqueue(second, maximumQueueDepth: 1_000, maximumAppDepth: 15)
                == .appQuotaFull(depth: 10, quota: 15))
        // Another app is not held by it.
        let other = FairnessTests.notification("b1", app: "com.example.b", devices: 0..<20, at: now)
        #expect(try await store.enqueue(other, maximumQueueDepth: 1_000, maximumAppDepth: nil) == .accepted)
        #expect(try await store.queueDepth(of: "com.example.a") == 10)
        #expect(try await store.queueDepth(of: "com.example.b") == 20)

        // Finished device-sends leave the app's count; requeued ones stay in it.
        let claimed = try await store.claim(owner: "t", limit: 100, now: now, leaseUntil: now.addingTimeInterval(60))
        let ofA = try #require(claimed.first { $0.id == "a1" })
        let outcomes = ofA.deliveries.enumerated().map { index, delivery in
            DeliveryOutcome(
                notificationID: "a1", position: delivery.position, token: delivery.token, app: "com.example.a",
                status: index < 8 ? 200 : nil, retryAt: index < 8 ? nil : now)
        }
        #expect(try await store.complete(outcomes, owner: "t", now: now) == 8)
        #expect(try await store.queueDepth(of: "com.example.a") == 2)
        #expect(try await store.queueDepth() == 22)
        #expect(try await store.enqueue(second, maximumQueueDepth: 1_000, maximumAppDepth: 15) == .accepted)

        // Binding a credential keeps the limits; clearing the limits keeps the credential.
        let vault = try CredentialVault(key: Array(repeating: 3, count: 32))
        let credential = try CredentialsTests.credential(
            "team-a", apps: ["com.example.a"], vault: vault, secret: .signingKey(pem: "key"))
        #expect(try await store.saveCredential(credential, replacing: nil))
        try await store.setLimits(of: "com.example.a", maximumQueued: nil, deviceSendsPerSecond: nil)
        #expect(try await store.appSettings() == [AppSettings(app: "com.example.a", credential: "team-a")])
        await queue.remove()
    }

    /// An app's quota holds when two instances accept its notifications at once: 40 requests of
    /// 5 devices, half through each store, for a quota of 50 — exactly 10 are accepted, whatever
    /// the order, and the app holds 50 device-sends.
    @Test(arguments: Backend.allCases)
    func anAppsQuotaHoldsAgainstInstancesAcceptingAtOnce(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let now = Date()
        let app = "com.example.busy"
        let results = try await queue.withSecondStore { second in
            try await withThrowingTaskGroup(of: EnqueueResult.self) { group in
                for index in 0..<40 {
                    let store = index.isMultiple(of: 2) ? queue.store : second
                    let notification = FairnessTests.notification(
                        "q\(index)", app: app, devices: (index * 5)..<(index * 5 + 5), at: now)
                    group.addTask {
                        try await store.enqueue(notification, maximumQueueDepth: 100_000, maximumAppDepth: 50)
                    }
                }
                return try await group.reduce(into: [EnqueueResult]()) { $0.append($1) }
            }
        }
        let accepted = results.filter { $0 == .accepted }.count
        let refused = results.filter { if case .appQuotaFull = $0 { true } else { false } }.count
        #expect(accepted == 10, "\(results)")
        #expect(refused == 30)
        #expect(try await queue.store.queueDepth(of: app) == 50)
        await queue.remove()
    }

    /// An app's device-sends a second, as the store keeps them: a request may overdraw the
    /// second's worth, the next waits for the debt, another app is not touched, and a second
    /// instance on the same queue spends the same budget.
    @Test(arguments: Backend.allCases)
    func aRequestMayOverdrawItsAppsSecondAndTheNextWaitsForTheDebt(_ backend: Backend) async throws {
        let queue = try await TestStore(backend)
        let store = queue.store
        let start = Date()
        // A request larger than a second's worth is accepted from a full bucket…
        #expect(try await store.takeDeviceSends(app: "a", devices: 5_000, rate: 100, now: start) == nil)
        // …and the next waits until the 4,900 overdrawn are paid back.
        let wait = try #require(
            try await store.takeDeviceSends(app: "a", devices: 1, rate: 100, now: start.addingTimeInterval(1)))
        #expect(wait > 47 && wait < 49, "\(wait)")
        #expect(
            try await store.takeDeviceSends(app: "b", devices: 1, rate: 100, now: start.addingTimeInterval(1)) == nil,
            "another app")
        // An instance whose clock is behind the last take's: no refill from before it.
        let behind = try #require(
            try await store.takeDeviceSends(app: "a", devices: 1, rate: 100, now: start.addingTimeInterval(-0.5)))
        #expect(behind > 49 && behind < 49.1, "\(behind)")
        // Once paid back, one request at a time again; a second instance sees the same bucket.
        #expect(
            try await store.takeDeviceSends(app: "a", devices: 60, rate: 100, now: start.addingTimeInterval(50)) == nil)
        let shared = try await queue.withSecondStore { second in
            try await second.takeDeviceSends(app: "a", devices: 1, rate: 100, now: start.addingTimeInterval(50))
        }
        #expect(shared == nil, "40 were left")
        #expect(
            try await store.takeDeviceSends(app: "a", devices: 50, rate: 100, now: start.addingTimeInterval(50)) == nil)
        let owed = try #require(
            try await queue.withSecondStore { second in
                try await second.takeDeviceSends(app: "a", devices: 1, rate: 100, now: start.addingTimeInterval(50))
            })
        #expect(owed > 0.115 && owed < 0.125, "11 owed and one to take, at 100 a second: \(owed)")
        // What was given back (nothing queued) is not owed.
        try await store.returnDeviceSends(app: "a", devices: 50, rate: 100)
        #expect(
            try await store.takeDeviceSends(app: "a", devices: 1, rate: 100, now: start.addingTimeInterval(50)) == nil)
        // Never more than a second's worth: a long idle app starts from a full bucket, no more.
        #expect(
            try await store.takeDeviceSends(app: "a", devices: 100, rate: 100, now: start.addingTimeInterval(10_000))
                == nil)
        #expect(
            try await store.takeDeviceSends(app: "a", devices: 1, rate: 100, now: start.addingTimeInterval(10_000))
                != nil)
        await queue.remove()
    }

    @Test func theAPIAnswers429ForAnAppOverItsQuotaOrRateWithWhatToDo() async throws {
        let setup = try await GatewayAPITests.Setup.start(.sqlite) { $0.keyCacheLifetime = .zero }
        try await setup.store.setLimits(of: "com.example.app", maximumQueued: 3, deviceSendsPerSecond: nil)
        let key = setup.key
        let tokens = (1...4).map { String(format: "%064x", $0) }
        try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: Array(tokens.prefix(2)))),
            ) { response in #expect(response.status == .accepted) }
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: Array(tokens.suffix(2)))),
            ) { response in
                #expect(response.status == .tooManyRequests)
                #expect(response.headers[.retryAfter] != nil)
                #expect(
                    String(buffer: response.body).contains(
                        "com.example.app has 2 unfinished device-sends and these 2 would take it past its quota (3)"))
            }
        }
        try await setup.store.setLimits(of: "com.example.app", maximumQueued: nil, deviceSendsPerSecond: 1)
        try await setup.client { client in
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: tokens)),
            ) { response in #expect(response.status == .accepted) }
            try await client.execute(
                uri: "/v1/notifications", method: .post, headers: GatewayAPITests.bearer(key),
                body: ByteBuffer(string: GatewayAPITests.alert(to: tokens)),
            ) { response in
                #expect(response.status == .tooManyRequests)
                #expect(String(buffer: response.body).contains("com.example.app may have 1.0 device-sends a second"))
            }
        }
        try await setup.stop()
    }
}
