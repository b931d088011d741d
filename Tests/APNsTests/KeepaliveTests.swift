@testable import APNs
import APNsMockServer
import Foundation
import InMemoryLogging
import Logging
import Testing

/// The libcurl range the transport accepts, and the keepalive it uses on idle connections. CI
/// runs this suite (with the whole library suite) against the system's libcurl 7.88 and against
/// 8.14 from bookworm-backports.
@Suite struct KeepaliveTests {
    static let http2 = Int32(1 << 16)  // CURL_VERSION_HTTP2

    @Test func libcurlOlderThan780IsRefusedWithWhatToInstall() {
        do {
            _ = try Libcurl(versionNumber: 0x07_4C_01, features: Self.http2)  // RHEL 9's 7.76.1, with HTTP/2
            Issue.record("libcurl 7.76.1 was accepted")
        } catch {
            #expect(error.kind == .unsupportedLibcurl)
            #expect(error.delivery == .notSent)
            #expect(
                error.message.hasPrefix("libcurl 7.76.1 is too old: swift-apns needs libcurl 7.80.0 or later"),
                "\(error.message)")
            #expect(error.message.contains("apt-get install libcurl4-openssl-dev"))
            #expect(error.message.contains("brew install curl"))
            #expect(APNsError.transport(error).retryAdvice == .safe)
        }
    }

    @Test func libcurlWithoutHTTP2IsRefused() {
        do {
            _ = try Libcurl(versionNumber: 0x08_05_00, features: 0)
            Issue.record("a libcurl without HTTP/2 was accepted")
        } catch {
            #expect(error.kind == .unsupportedLibcurl)
            #expect(
                error.message.hasPrefix("libcurl 8.5.0 was built without HTTP/2 (nghttp2), which APNs requires."),
                "\(error.message)")
        }
    }

    @Test func theVersionsOurUsersRunAreAccepted() throws {
        // Ubuntu 22.04, Ubuntu 24.04, Debian 12, Debian 13 and bookworm-backports, the newest tag read.
        let cases: [(UInt32, String)] = [
            (0x07_50_00, "7.80.0"), (0x07_51_00, "7.81.0"), (0x08_05_00, "8.5.0"), (0x07_58_01, "7.88.1"),
            (0x08_0E_01, "8.14.1"),
            (0x08_15_00, "8.21.0"),
        ]
        for (number, name) in cases {
            #expect(try Libcurl(versionNumber: number, features: Self.http2).version.description == name)
        }
        #expect(Libcurl.minimum.description == "7.80.0")
    }

    @Test func theLoadedLibcurlPassesAndTheConnectorSaysWhichKeepaliveItUses() async throws {
        let libcurl = try Libcurl.loaded.get()
        #expect(libcurl.version >= Libcurl.minimum)
        try await Fixture.with { fixture in
            let logs = InMemoryLogHandler()
            let connector = try fixture.tokenConnector(loggingTo: logs)
            let lines = logs.entries.filter { $0.message.description.hasPrefix("APNs connection keepalive: ") }
            #expect(lines.count == 1)
            #expect(lines.first?.level == .debug)
            #expect(lines.first?.metadata["curl.version"]?.description == libcurl.version.description)
            let warm =
                libcurl.keepsAConnectionNothingWasWrittenOn
                ? "idle sockets watched and a connection kept warm while run as a service"
                : "no keep-warm (it needs libcurl 7.88.0)"
            #expect(
                lines.first?.message.description
                    == "APNs connection keepalive: TCP keepalive every 30.0 seconds; \(warm); "
                    + "no HTTP/2 PING (no libcurl writes one on an idle connection)"
            )
            await connector.shutdown()
        }
    }

}

extension KeepaliveTests {
    /// An idle period of the loop's, in real time, through libcurl: the serial tier runs every suite
    /// named RealTime alone.
    @Suite(.serialized) struct RealTime {
        /// What the Reliability article says of PING, checked on whichever libcurl is loaded: an idle
        /// connection gets no HTTP/2 PING, and the connection is still there for the next send.
        @Test func anIdleConnectionGetsNoPingAndIsReusedAfterwards() async throws {
            try await Fixture.with { fixture in
                let connector = try fixture.tokenConnector()
                #expect(try await send(KeepWarmTests.notification, via: connector, to: .test).status == 200)
                // Real time is the subject: an idle period in which libcurl would send a PING if it did.
                try await Task.sleep(for: .milliseconds(1500))
                #expect(fixture.server.pingCount == 0)
                #expect(try await send(KeepWarmTests.notification, via: connector, to: .test).status == 200)
                #expect(fixture.server.connectionCount == 1)
                await connector.shutdown()
            }
        }
    }
}
