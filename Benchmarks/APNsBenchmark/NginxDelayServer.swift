import APNsMockServer
import Foundation

/// A second delayed server for the far-from-APNs table: nginx (Debian's `nginx-light` with
/// `libnginx-mod-http-echo`) answering every request 200 after `echo_sleep`. It is event-driven C
/// with one worker, so a burst of 1,000 requests is read at once and each answer leaves on time —
/// where the mock, at about 100 µs of CPU per request, answers the last of a burst late and so
/// caps every client (h2load included) near 0.55 of the bound at 1,000 streams and 100 ms.
/// It checks nothing (no token, no path rules): a round trip of the right length, no more.
enum NginxDelayServer {
    static let echoModule = "/usr/lib/nginx/modules/ngx_http_echo_module.so"

    /// nginx's path when it and the echo module are installed.
    static func find() -> String? {
        guard FileManager.default.fileExists(atPath: echoModule) else { return nil }
        for directory in ["/usr/sbin", "/usr/local/sbin"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        {
            let path = "\(directory)/nginx"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Starts nginx in a folder of its own, with a CA and a server certificate made for this run,
    /// answering `delayMilliseconds` after each request arrives; up to `streams` streams per
    /// connection.
    static func launch(_ nginx: String, delayMilliseconds: Int, streams: Int) throws -> MockServerProcess {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apns-bench-nginx-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let authority = try MockCertificateAuthority(name: "swift-apns benchmark CA")
        let certificate = try authority.issueServerCertificate()
        func write(_ text: String, _ name: String) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let caPath = try write(authority.certificatePEM, "ca.pem")
        let certificatePath = try write(certificate.certificatePEM, "server.pem")
        let keyPath = try write(certificate.privateKeyPEM, "server-key.pem")
        let port = try freePort()
        let configuration = """
            load_module \(echoModule);
            \(getuid() == 0 ? "user root;" : "")
            worker_processes 1;
            pid \(folder.path)/nginx.pid;
            error_log \(folder.path)/error.log warn;
            events { worker_connections 1024; }
            http {
              access_log off;
              client_body_temp_path \(folder.path)/body;
              server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(certificatePath);
                ssl_certificate_key \(keyPath);
                http2_max_concurrent_streams \(max(streams, 128));
                keepalive_requests 1000000000;
                keepalive_timeout 600s;
                location / {
                  \(delayMilliseconds > 0 ? "echo_sleep \(Double(delayMilliseconds) / 1000);" : "")
                  echo_status 200;
                  echo -n "";
                }
              }
            }
            """
        let configurationPath = try write(configuration, "nginx.conf")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", folder.path, "-c", configurationPath, "-g", "daemon off;"]
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        // Listening when a connection is accepted.
        for _ in 0..<100 {
            if canConnect(port: port) {
                return MockServerProcess(
                    process: process, port: port, caPath: caPath, stopSignal: SIGTERM, leftovers: [folder.path])
            }
            usleep(50_000)
        }
        kill(process.processIdentifier, SIGKILL)
        let log = (try? String(contentsOfFile: "\(folder.path)/error.log", encoding: .utf8)) ?? ""
        throw BenchmarkError("nginx did not start listening on 127.0.0.1:\(port): \(log)")
    }

    /// A port nothing listens on now (the kernel's choice for a socket bound to port 0).
    static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw BenchmarkError("socket: \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw BenchmarkError("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func canConnect(port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
