import APNs
import APNsMockServer
import Foundation

/// A proxy process on 127.0.0.1, stopped by `stop()` (and when the test process ends: it is
/// started with its own pipe on standard input and exits with the test).
package final class LocalProxy: Sendable {
    package let port: Int
    private let process: TestProcess
    private let directory: URL

    private init(port: Int, process: TestProcess, directory: URL) {
        self.port = port
        self.process = process
        self.directory = directory
    }

    /// Whether the proxy's process holds the TCP socket from `port` to `remotePort` on 127.0.0.1:
    /// the connection a server on `remotePort` accepted came from the proxy, not from the test
    /// process.
    package func holdsSocket(localPort port: Int, remotePort: Int) -> Bool {
        Self.process(process.processIdentifier, holdsSocketFrom: port, to: remotePort)
    }

    /// Whether process `pid` holds the TCP socket from local port `port` to `remotePort`, both on
    /// 127.0.0.1, read from `/proc/net/tcp` (the socket's inode) and `/proc/<pid>/fd` (Linux only;
    /// false elsewhere). Both ends, because the kernel gives one local port to connections to
    /// different peers: a socket of another test, to another server, may have the same.
    package static func process(_ pid: Int32, holdsSocketFrom port: Int, to remotePort: Int) -> Bool {
        #if os(Linux)
            // Read to the end: `String(contentsOfFile:)` trusts the size /proc reports (0) and stops at
            // the first page, and after a few hundred connections the port is further down.
            guard let handle = FileHandle(forReadingAtPath: "/proc/net/tcp"),
                let data = try? handle.readToEnd()
            else { return false }
            try? handle.close()
            let table = String(decoding: data, as: UTF8.self)
            let local = String(format: "0100007F:%04X", port)
            let remote = String(format: "0100007F:%04X", remotePort)
            let inodes = table.split(separator: "\n").dropFirst().compactMap { line -> String? in
                let fields = line.split(separator: " ")
                return fields.count > 9 && fields[1] == local && fields[2] == remote ? String(fields[9]) : nil
            }
            let folder = "/proc/\(pid)/fd"
            for descriptor in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(descriptor)")
                else { continue }
                if inodes.contains(where: { target == "socket:[\($0)]" }) { return true }
            }
            return false
        #else
            return false
        #endif
    }

    package func stop() {
        if process.isRunning {
            // SIGKILL: tinyproxy in the foreground does not stop on SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// tinyproxy (HTTP CONNECT), with Basic credentials if given.
    package static func tinyproxy(username: String? = nil, password: String? = nil) async throws -> LocalProxy {
        try await start { port, directory in
            var lines = [
                "Port \(port)", "Listen 127.0.0.1", "Timeout 60", "MaxClients 100", "LogLevel Error",
            ]
            if getuid() == 0 { lines += ["User nobody", "Group nogroup"] }
            if let username, let password { lines.append("BasicAuth \(username) \(password)") }
            let config = directory.appendingPathComponent("tinyproxy.conf")
            try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
            return ("tinyproxy", ["-d", "-c", config.path])
        }
    }

    /// microsocks (SOCKS5), with credentials if given.
    package static func microsocks(username: String? = nil, password: String? = nil) async throws -> LocalProxy {
        try await start { port, _ in
            var arguments = ["-i", "127.0.0.1", "-p", "\(port)"]
            if let username, let password { arguments += ["-u", username, "-P", password] }
            return ("microsocks", arguments)
        }
    }

    /// stunnel: TLS on its own port, in front of a proxy on `front` (an HTTPS proxy).
    package static func stunnel(
        inFrontOf front: Int, certificate: MockCertificateAuthority.IssuedCertificate
    ) async throws -> LocalProxy {
        try await start { port, directory in
            let certificatePath = directory.appendingPathComponent("proxy.pem")
            let keyPath = directory.appendingPathComponent("proxy.key")
            try certificate.certificatePEM.write(to: certificatePath, atomically: true, encoding: .utf8)
            try certificate.privateKeyPEM.write(to: keyPath, atomically: true, encoding: .utf8)
            let config = directory.appendingPathComponent("stunnel.conf")
            try """
            foreground = yes
            pid =
            debug = 3
            [proxy]
            accept = 127.0.0.1:\(port)
            connect = 127.0.0.1:\(front)
            cert = \(certificatePath.path)
            key = \(keyPath.path)

            """.write(to: config, atomically: true, encoding: .utf8)
            return ("stunnel4", [config.path])
        }
    }

    private static func start(_ command: (Int, URL) throws -> (String, [String])) async throws -> LocalProxy {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let port = try freePort()
        let (name, arguments) = try command(port, directory)
        guard
            let path = ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/opt/homebrew/bin"]
                .map({ "\($0)/\(name)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw ProxyTestError(
                "\(name) is not installed: run Scripts/install-dependencies.sh (Debian: tinyproxy-bin, stunnel4, microsocks)"
            )
        }
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let proxy = LocalProxy(port: port, process: process, directory: directory)
        // Ready once it accepts a TCP connection (10 s at most); given up on if it ends first.
        await Poll.until(within: .seconds(10), every: .milliseconds(50)) {
            canConnect(port: port) || !process.isRunning
        }
        if canConnect(port: port) { return proxy }
        proxy.stop()
        throw ProxyTestError("\(name) did not start listening on 127.0.0.1:\(port)")
    }

    private static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM_VALUE), 0)
        defer { close(socket) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw ProxyTestError("no free port on 127.0.0.1") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func canConnect(port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM_VALUE), 0)
        defer { close(socket) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

#if os(Linux)
    private let SOCK_STREAM_VALUE = SOCK_STREAM.rawValue
#else
    private let SOCK_STREAM_VALUE = SOCK_STREAM
#endif

package struct ProxyTestError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
