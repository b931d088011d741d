@testable import APNs
import APNsMockServer
import APNsTesting
import CCurl
import Foundation
import NIOCore
import NIOPosix
import Testing

/// A TCP listener on loopback that accepts connections and never answers.
struct SilentServer {
    let group: MultiThreadedEventLoopGroup
    let channel: Channel
    var port: Int { channel.localAddress?.port ?? 0 }

    static func start() async throws -> SilentServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        return SilentServer(group: group, channel: channel)
    }

    func stop() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

@Suite struct TransportTests {
    let key = MockCertificateAuthority.makeSigningKey(teamID: "TEAM000001", keyID: "KEY0000001")

    func connector(port: Int, timeout: Duration = .seconds(60)) throws -> TokenConnector {
        let transport = TransportConfiguration(requestTimeout: timeout)
        return try TokenConnector(
            teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM),
            environment: .custom(host: "127.0.0.1", port: port), transport: transport)
    }

    /// An answer longer than libcurl's read buffer and than one HTTP/2 DATA frame arrives whole
    /// (the reason is at its end). With the read buffer at 4 KB (`CURLOPT_BUFFERSIZE`), libcurl 7.88
    /// received all 40,040 bytes and never ended the transfer: the send timed out, `unknown`.
    @Test func anAnswerLongerThanTheReadBufferArrivesWhole() async throws {
        let padding = String(repeating: "x", count: 40_000)
        try await withRejection(body: #"{"padding":"\#(padding)","reason":"BadDeviceToken"}"#) { rejection, _ in
            #expect(rejection.status == 400)
            #expect(rejection.reason == .badDeviceToken)
        }
    }

    /// A body past the transport's 1 MiB is read to its end and dropped: the reason at the start of
    /// a 3 MiB body is lost (what was kept is not whole JSON), the status is not, and the next send
    /// on the connector is answered.
    @Test func anAnswerLongerThanTheLimitIsCutAndTheNextSendIsAnswered() async throws {
        let padding = String(repeating: "x", count: 3 << 20)
        try await withRejection(body: #"{"reason":"BadDeviceToken","padding":"\#(padding)"}"#) { rejection, connector in
            #expect(rejection.status == 400)
            #expect(rejection.reason == nil)
            #expect(rejection.body.count == 4096)
            #expect(rejection.bodyText.hasPrefix(#"{"reason":"BadDeviceToken","padding":"xxx"#))
            let response = try await send(
                AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            #expect(response.status == 200)
        }
    }

    /// Sends one alert to a mock that answers it 400 with `body`, and hands the rejection and the
    /// connector to `check`.
    func withRejection(
        body: String, _ check: (APNsRejection, TokenConnector) async throws -> Void
    ) async throws {
        try await Fixture.with { fixture in
            fixture.server.inject(.respond(status: 400, retryAfter: nil, body: body), requests: 1)
            let connector = try fixture.tokenConnector()
            let error = await #expect(throws: APNsError.self) {
                try await send(AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }, via: connector, to: .test)
            }
            if case .rejected(let rejection)? = error {
                try await check(rejection, connector)
            } else {
                Issue.record("expected a rejection, got \(String(describing: error))")
            }
            await connector.shutdown(gracePeriod: .seconds(1))
        }
    }

    @Test func timeoutIsATransportError() async throws {
        let silent = try await SilentServer.start()
        let connector = try connector(port: silent.port, timeout: .milliseconds(500))
        do {
            try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: .test)
            Issue.record("expected a timeout")
        } catch .transport(let error) {
            #expect(error.isTimeout)
            // The TCP connection was accepted but TLS never completed: nothing was written.
            #expect(error.delivery == .notSent)
            #expect(error.description.contains("(timeout, curl 28)"))
        } catch {
            Issue.record("expected a transport failure, got \(error)")
        }
        try await silent.stop()
    }

    @Test func cancellationEndsTheSend() async throws {
        let silent = try await SilentServer.start()
        let connector = try connector(port: silent.port)
        let task = Task {
            try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: .test)
        }
        task.cancel()
        await #expect(
            throws: APNsError.transport(
                TransportError(kind: .cancelled, delivery: .notSent, message: "the send was cancelled"))
        ) { try await task.value }
        try await silent.stop()
    }

    @Test func untrustedServerCertificateIsRefused() async throws {
        try await Fixture.with { fixture in
            // No trusted CA given: the system roots do not know the mock server's CA.
            let connector = try TokenConnector(
                teamID: key.teamID, keyID: key.keyID, key: .pem(key.privateKeyPEM), environment: fixture.environment)
            do throws(APNsError) {
                try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: .test)
                Issue.record("expected TLS verification to fail")
            } catch .transport(let error) {
                #expect(error.curlCode == 60)
                #expect(error.kind == .tls)
                #expect(error.delivery == .notSent)
            } catch {
                Issue.record("expected a transport failure, got \(error)")
            }
            #expect(fixture.server.requests.isEmpty)
        }
    }

    @Test func nothingListening() async throws {
        let silent = try await SilentServer.start()
        let port = silent.port
        try await silent.stop()
        let connector = try connector(port: port)
        let error = await #expect(throws: APNsError.self) {
            try await send(AlertNotification(bundleID: "com.example.app") { Alert("x") }, via: connector, to: .test)
        }
        #expect(error.flatMap(transportFailure)?.kind == .connect)
        #expect(error.flatMap(transportFailure)?.delivery == .notSent)
        #expect(error?.retryAdvice == .safe)
    }

    /// A path the transport hands a URL handle unparsed (``CurlMultiLoop/isPlainPath(_:)``) is one
    /// that libcurl's own parser, which every other path goes through, leaves as it is.
    @Test func aPlainPathIsOneLibcurlsParserLeavesAsItIs() throws {
        func parsedPath(_ path: String) -> String? {
            guard let handle = curl_url() else { return nil }
            defer { curl_url_cleanup(handle) }
            guard curl_url_set(handle, CURLUPART_URL, "https://api.push.apple.com:443" + path, 0) == CURLUE_OK else {
                return nil
            }
            var part: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, CURLUPART_PATH, &part, 0) == CURLUE_OK, let part else { return nil }
            defer { curl_free(part) }
            return String(cString: part)
        }
        func isPlain(_ path: String) -> Bool { CurlMultiLoop.isPlainPath(path) }
        let plain = [
            Device.test.path, "/1/apps/com.example.App-2/channels", "/1/apps/com.example.app/all-channels",
            "/4/broadcasts/apps/com.example_x~y", "/", "/a./b..",
        ]
        for path in plain {
            #expect(isPlain(path), "\(path)")
            #expect(parsedPath(path) == path, "\(path)")
        }
        // Not plain: each goes through libcurl's parser, which changes most of them.
        let other = [
            "", "3/device/ab", "/a/./b", "/a/../b", "/.", "/a/.hidden", "/a?b=1", "/a#b", "/%41", "/a b", "/ä",
        ]
        for path in other { #expect(!isPlain(path), "\(path)") }
        #expect(parsedPath("/a/./b") == "/a/b")
        #expect(parsedPath("/a/../b") == "/b")
        #expect(parsedPath("/a?b=1") == "/a")
    }

    /// An easy handle's URL handle follows the requests it carries, one after the other: a path
    /// libcurl must parse (here with a dot segment, which it removes) goes as before, and the next
    /// plain one takes the URL handle again; each request reaches its own device.
    @Test func eachRequestGoesToItsOwnPathWhateverTheOneBefore() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let devices = try ["a1", "b2", "c3", "d4"].map { try Device(token: String(repeating: $0, count: 32)) }
            let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
            try await send(notification, via: connector, to: devices[0])
            let plain = try notification.request(to: devices[1])
            let dotted = APNsRequest(
                method: plain.method, service: plain.service, path: "/3/./device/" + devices[1].token,
                headers: plain.headers, body: plain.body)
            #expect(try await connector.perform(dotted).status == 200)
            try await send(notification, via: connector, to: devices[2])
            try await send(notification, via: connector, to: devices[3])
            #expect(fixture.server.requests.map(\.path) == devices.map(\.path))
        }
    }

    @Test func validationFailsBeforeAnyIO() async throws {
        let connector = TokenRecordingConnector()
        await #expect(throws: APNsError.validation(.collapseIDTooLong(bytes: 65, limit: 64))) {
            try await send(
                AlertNotification(bundleID: "a", collapseID: CollapseID(String(repeating: "x", count: 65))) {
                    Alert("x")
                }, via: connector, to: .test)
        }
        #expect(connector.requests.isEmpty)
    }
}

/// The transport's own timing, measured in real time through libcurl: a lone request is written at
/// once, not held back by the write coalescing, and an idle connector's loop sleeps. In the serial
/// tier (Scripts/library-tests.sh): beside other suites a busy machine would decide them.
@Suite struct TransportTimingTests {
    /// The transport corks its connection while libcurl writes, so what a pass writes leaves in few
    /// TCP segments, and uncorks it before it sleeps. A connection left corked would hold a lone
    /// request back until the kernel's 200 ms ceiling: every one of these sends would take that long.
    @Test func aLoneRequestIsNotHeldBack() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector()
            let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
            try await send(notification, via: connector, to: .test)  // the connection is made
            var durations: [Duration] = []
            for _ in 0..<11 {
                let start = ContinuousClock.now
                try await send(notification, via: connector, to: .test)
                durations.append(ContinuousClock.now - start)
            }
            // The median, so one slow moment of the machine does not decide; usually under 1 ms.
            #expect(durations.sorted()[5] < Duration.milliseconds(100).scaledForSanitizers)
            #expect(fixture.server.requests.count == 12)
        }
    }

    /// An idle connector sleeps: with its connection open and nothing to send, the loop waits in
    /// poll(2) for libcurl's sockets, its timer and a wake-up, and makes a pass only when one of
    /// them says so (or its one-second limit passes). A loop that polled without waiting (a timer
    /// it took for due and never ran, say) would make thousands of passes a second, however busy
    /// the machine; and the next send is answered.
    @Test func anIdleConnectorSleeps() async throws {
        try await Fixture.with { fixture in
            let connector = try fixture.tokenConnector(reportingTo: AwaitableReports())
            let notification = AlertNotification(bundleID: Fixture.bundleID) { Alert("x") }
            #expect(try await send(notification, via: connector, to: .test).status == 200)
            let transport = connector.engine.transport
            let before = transport.inboxTakes
            try await Task.sleep(for: .seconds(1))  // real time is the subject: one idle second of the loop
            let passes = transport.inboxTakes - before
            #expect(passes < 50, "the loop made \(passes) passes in one idle second")
            #expect(try await send(notification, via: connector, to: .test).status == 200)
            await connector.shutdown()
        }
    }
}
