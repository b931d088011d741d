import APNs
import APNsMockServer
import APNsVapor
import Foundation
import Synchronization
import Testing
import Vapor
import VaporTesting

extension APNsConnectorID<CertificateAuthentication> {
    static let legacy = APNsConnectorID("legacy")
}

extension APNsConnectorID<RunTimeAuthentication> {
    static let configured = APNsConnectorID("configured")
}

/// `app.apns`: named connectors, defaults by authentication, shutdown with the application.
@Suite struct ConnectorTests {
    static let alert = AlertNotification(bundleID: MockAPNs.topic) { Alert("Hi") }

    @Test func aSendWithoutViaTakesTheDefaultItsPushTypeAccepts() async throws {
        let apns = try await MockAPNs.start()
        let device = try Device(token: MockAPNs.token)
        try await withApp { app in
            // Only a certificate connector: alerts (token or certificate) go through it.
            try app.apns.use(apns.certificateConnector())
            try await app.apns.send(Self.alert, to: device)
            #expect(
                apns.server.requests.last?.authentication
                    == .certificate(commonName: "Apple Push Services: \(MockAPNs.topic)"))
            // A widget push needs token authentication: with no token connector it is not sent.
            await #expect(throws: APNsConfigurationError.self) {
                try await app.apns.send(WidgetNotification(bundleID: MockAPNs.topic), to: device)
            }
            // With both, a type that accepts both takes the token connector.
            try app.apns.use(apns.tokenConnector())
            try await app.apns.send(Self.alert, to: device)
            guard case .token(MockAPNs.teamID, MockAPNs.keyID, _)? = apns.server.requests.last?.authentication else {
                Issue.record("not sent through the token connector: \(String(describing: apns.server.requests.last))")
                return
            }
            try await app.apns.send(WidgetNotification(bundleID: MockAPNs.topic), to: device)
            #expect(apns.server.requests.count == 3)
        }
        try await apns.stop()
    }

    @Test func namedConnectorsAndOneChosenAtRunTime() async throws {
        let apns = try await MockAPNs.start()
        let device = try Device(token: MockAPNs.token)
        try await withApp { app in
            try app.apns.use(apns.certificateConnector(), as: .legacy)
            try app.apns.use(AnyConnector(apns.certificateConnector()), as: .configured)
            try await app.apns.send(Self.alert, via: .legacy, to: device)
            // Chosen at run time: the widget's rules are checked before any I/O.
            await #expect {
                try await app.apns.send(WidgetNotification(bundleID: MockAPNs.topic), via: .configured, to: device)
            } throws: { error in
                guard case APNsError.validation(.authenticationNotAllowed) = error else { return false }
                return true
            }
            // A name registered twice, and a default never registered.
            #expect(throws: APNsConfigurationError.self) { try app.apns.use(apns.certificateConnector(), as: .legacy) }
            let missing = await #expect(throws: APNsConfigurationError.self) {
                try await app.apns.send(Self.alert, to: device)
            }
            #expect(missing?.kind == .notRegistered)
            #expect(missing?.description.contains("app.apns has no default token connector") == true)
            #expect(missing?.reason == "push notifications are not configured on this server")
            // Bulk, through a named connector.
            let devices = (1...50).map { try! Device(token: String(format: "%064x", $0)) }
            let summary = try await app.apns.send(Self.alert, via: .legacy, to: devices)
            #expect(summary.accepted == 50)
        }
        #expect(apns.server.requests.count == 51)
        try await apns.stop()
    }

    @Test func stoppingTheAppDrainsSendsInFlight() async throws {
        let apns = try await MockAPNs.start()
        apns.server.inject(.delay(.milliseconds(800)))
        // What can throw comes before the app: an app released without its shutdown traps in Vapor.
        let connector = try apns.tokenConnector()
        let device = try Device(token: MockAPNs.token)
        let app = try await Application.make(.testing)
        try app.apns.use(connector)
        let sends = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { try await app.apns.send(Self.alert, to: device).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        // Every send has reached the server (and waits there for its answer) before the app stops.
        #expect(await apns.server.arrivals(count: 20, within: .seconds(30)))
        let stopping = ContinuousClock.now
        try await app.asyncShutdown()
        let statuses = try await sends.value
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(ContinuousClock.now - stopping < .seconds(5))
        // After the app stopped: refused, not sent.
        let late = await #expect(throws: APNsConfigurationError.self) {
            try await app.apns.send(Self.alert, to: device)
        }
        #expect(late?.kind == .shutDown)
        #expect(apns.server.requests.count == 20)
        try await apns.stop()
    }

    @Test func aConnectorFromEnvironmentVariables() async throws {
        let apns = try await MockAPNs.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-vapor-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("AuthKey.p8"), caFile = folder.appendingPathComponent("ca.pem")
        try apns.key.privateKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
        try apns.server.certificateAuthorityPEM.write(to: caFile, atomically: true, encoding: .utf8)
        // A prefix of this test's own, so no other test sees these variables.
        let variables = [
            "APNSENVTEST_KEY_FILE": keyFile.path, "APNSENVTEST_KEY_ID": MockAPNs.keyID,
            "APNSENVTEST_TEAM_ID": MockAPNs.teamID, "APNSENVTEST_HOST": "\(apns.server.host):\(apns.server.port)",
            "APNSENVTEST_CA_FILE": caFile.path, "APNSENVTEST_PROXY": "direct",
        ]
        for (name, value) in variables { setenv(name, value, 1) }
        defer { for name in variables.keys { unsetenv(name) } }
        try await withApp { app in
            try app.apns.useFromEnvironment(prefix: "APNSENVTEST")
            try await app.apns.send(Self.alert, to: try Device(token: MockAPNs.token))
            setenv("APNSENVTEST_ENVIRONMENT", "staging", 1)
            let error = #expect(throws: APNsConfigurationError.self) {
                try app.apns.useFromEnvironment(prefix: "APNSENVTEST", as: "second")
            }
            #expect(error?.description == "APNSENVTEST_ENVIRONMENT is staging: use production or sandbox")
            unsetenv("APNSENVTEST_ENVIRONMENT")
            let none = #expect(throws: APNsConfigurationError.self) {
                try app.apns.useFromEnvironment(prefix: "APNSNOTSET")
            }
            #expect(none?.description.contains("set APNSNOTSET_KEY_FILE") == true)
        }
        #expect(apns.server.requests.count == 1)
        try await apns.stop()
    }

    /// An actor whose executor counts the jobs run on it.
    actor CountingActor {
        final class Executor: SerialExecutor {
            let queue = DispatchQueue(label: "counting-actor")
            let jobs = Mutex(0)
            func enqueue(_ job: consuming ExecutorJob) {
                jobs.withLock { $0 += 1 }
                let job = UnownedJob(job)
                queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
            }
        }
        let executor = Executor()
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        var accepted = 0

        func send(to devices: [Device], through apns: Application.APNs) async throws -> BulkSendSummary {
            try await apns.send(ConnectorTests.alert, to: devices) { outcome in
                if outcome.isAccepted { accepted += 1 }
            }
        }
    }

    /// A bulk send made on an actor reads its outcomes there, as the library's does: `onOutcome`
    /// uses the actor's state without a hop per outcome.
    @Test func outcomesOnAnActorCostNoHopEach() async throws {
        let apns = try await MockAPNs.start()
        let devices = (1...2_000).map { try! Device(token: String(format: "%064x", $0)) }
        try await withApp { app in
            try app.apns.use(apns.tokenConnector())
            let actor = CountingActor()
            let before = actor.executor.jobs.withLock { $0 }
            let summary = try await actor.send(to: devices, through: app.apns)
            let jobs = actor.executor.jobs.withLock { $0 } - before
            #expect(summary.accepted == devices.count)
            #expect(await actor.accepted == devices.count)
            // At least one job per outcome when each onOutcome hopped onto the actor.
            #expect(jobs < devices.count / 2, "\(jobs) jobs on the actor for \(devices.count) outcomes")
        }
        try await apns.stop()
    }
}
