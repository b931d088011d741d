internal import CCurl
import Foundation
import Logging

// Connections: their set-up, stall detection, the socket callbacks and GOAWAY.

extension CurlMultiLoop {
    /// A transfer finished that opened `count` connections: log each one's set-up.
    func connectionEstablished(_ easy: UnsafeMutableRawPointer, count: Int, code: CURLcode) {
        assertOnLoopThread()
        guard observability.isEnabled else { return }
        observability.connectionsOpened.increment(by: Int64(count))
        guard observability.logger.logLevel <= .info else { return }
        var connect: curl_off_t = 0
        var handshake: curl_off_t = 0
        var port = 0
        var address: UnsafeMutableRawPointer?
        _ = ccurl_easy_getinfo_off_t(easy, CURLINFO_CONNECT_TIME_T, &connect)
        _ = ccurl_easy_getinfo_off_t(easy, CURLINFO_APPCONNECT_TIME_T, &handshake)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_PRIMARY_PORT, &port)
        _ = ccurl_easy_getinfo_pointer(easy, CURLINFO_PRIMARY_IP, &address)
        let host = address.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
        var metadata: Logger.Metadata = [
            "server.address": "\(host)", "server.port": "\(port)",
            "apns.connect_ms": "\(Double(connect) / 1000)",
        ]
        if handshake > 0 {
            metadata["apns.tls_ms"] = "\(Double(handshake) / 1000)"
            observability.logger.info("APNs connection established (TLS, HTTP/2)", metadata: metadata)
        } else {
            metadata["curl.code"] = "\(code.rawValue)"
            observability.logger.info("APNs connection opened; TLS was not established", metadata: metadata)
        }
    }

    /// A written request timed out. If nothing arrived on its connection for nearly all of the
    /// request's wait (``StallJudgement``), the connection is stalled (a server or middlebox that
    /// stopped answering): libcurl would keep using it for every later request, since a stream
    /// timeout does not close an HTTP/2 connection. Shutting its socket down makes libcurl fail
    /// what is on it (written, so `unknown`) and open a new connection for what comes next.
    func closeIfStalled(_ transfer: Transfer) {
        assertOnLoopThread()
        let port = transfer.localPort
        guard port != 0 else { return }
        guard !connections.isStalled(port: port),
            let socket = connections.openSockets.first(where: { localPort(of: $0) == port })
        else { return }
        let now = clock.now
        let verdict = StallJudgement(submittedAt: transfer.time.submittedAt, now: now).verdict(
            now: now, lastAnswer: connections.lastAnswer(onPort: port), unreadBytes: unreadBytes(on: socket),
            sinceDataReceived: timeSinceDataReceived(on: socket))
        guard verdict == .stalled else { return }
        connections.shutDownAsStalled(port: port)
        _ = Foundation.shutdown(socket, Int32(SHUT_RDWR))
        inbox.withLock { $0.count(stalledClosed: 1) }
        if observability.isEnabled {
            observability.connectionsStalled.increment()
            observability.logger.notice(
                "APNs connection stalled: a request timed out with nothing answered since it was written; closing it",
                metadata: ["apns.connection.local_port": "\(port)"])
        }
    }

    /// APNs answered a request on the connection at `port` UnrelatedKeyIdInToken: it tied the
    /// connection to the key of its first push, and will refuse every other key's token on it.
    /// Apple's remedy is a new connection (<doc:ProtocolReference#Responses>), and libcurl has no
    /// way to stop reusing a connection that still carries streams. So nothing more is written on
    /// it (its port joins the stalled ones, whose requests are stopped before any byte and queued
    /// again), nothing new starts while requests written on it await their answers (each gets
    /// one, or its deadline), and then it is shut down (``closeRetiredConnections()``): what
    /// waited goes out on a new connection. No stream is cut, so no outcome becomes unknown.
    func retireTiedToAnotherKey(port: Int32) {
        assertOnLoopThread()
        guard connections.retire(port: port) else { return }
        if observability.isEnabled {
            observability.logger.notice(
                "APNs tied this connection to another key (UnrelatedKeyIdInToken); closing it once its requests are answered",
                metadata: ["apns.connection.local_port": "\(port)"])
        }
    }

    /// Shuts down each retiring connection no written request waits on; libcurl then finds it
    /// closed and opens a new one for the next request.
    func closeRetiredConnections() {
        assertOnLoopThread()
        let ready = connections.retirable { port in
            pool.transfers.contains(where: { $0.isWritten && $0.localPort == port })
        }
        for port in ready {
            if let socket = connections.openSockets.first(where: { localPort(of: $0) == port }) {
                _ = Foundation.shutdown(socket, Int32(SHUT_RDWR))
                // A pool that shrinks retires one of its connections; the others carry what follows.
                let othersLeft = connections.openSockets.contains { other in
                    other != socket && !connections.isStalled(port: localPort(of: other))
                }
                connections.closingRetired(othersLeft: othersLeft)
            }
        }
    }

    /// Whether a socket libcurl opened and has not closed is bound to `localPort` (a connection
    /// shut down as stalled still counts until libcurl closes it).
    func hasOpenSocket(localPort port: Int32) -> Bool {
        connections.openSockets.contains { localPort(of: $0) == port }
    }

    /// How many received bytes wait unread on `socket` (`FIONREAD`), or 0 when it cannot tell.
    func unreadBytes(on socket: Int32) -> Int32 {
        var count: Int32 = 0
        #if os(Linux)
            let request = UInt(FIONREAD)
        #else
            let request: UInt = 0x4004_667F  // FIONREAD: _IOR('f', 127, int), a macro Swift does not import
        #endif
        return ioctl(socket, request, &count) == 0 ? count : 0
    }

    /// How long ago the kernel last received data on `socket` (`TCP_INFO`'s `tcpi_last_data_recv`,
    /// Linux); nil where it cannot tell (other systems, or not a TCP socket), and then the answers
    /// the loop saw are the only evidence.
    func timeSinceDataReceived(on socket: Int32) -> Duration? {
        #if os(Linux)
            var info = tcp_info()
            var length = socklen_t(MemoryLayout<tcp_info>.size)
            guard getsockopt(socket, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return nil }
            return .milliseconds(info.tcpi_last_data_recv)
        #else
            return nil
        #endif
    }

    /// The local port a socket is bound to, or 0.
    func localPort(of socket: Int32) -> Int32 {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { return 0 }
        let port: UInt16
        switch Int32(address.ss_family) {
        case AF_INET: port = withUnsafeBytes(of: &address) { $0.load(as: sockaddr_in.self).sin_port }
        case AF_INET6: port = withUnsafeBytes(of: &address) { $0.load(as: sockaddr_in6.self).sin6_port }
        default: return 0
        }
        return Int32(UInt16(bigEndian: port))
    }

    /// `CURLOPT_OPENSOCKETFUNCTION`, on the loop thread: opens the socket libcurl asks for and
    /// remembers it, so a stalled connection can be found by its local port.
    func openSocket(family: Int32, type: Int32, protocol: Int32) -> Int32 {
        assertOnLoopThread()
        let socket = Foundation.socket(family, type, `protocol`)
        if socket >= 0 {
            connections.opened(socket)
            if observability.isEnabled {
                observability.connectionsOpen.increment()
                observability.logger.debug("APNs connection opening", metadata: ["apns.connection.socket": "\(socket)"])
            }
        }
        return socket
    }

    /// `CURLOPT_CLOSESOCKETFUNCTION`, on the loop thread.
    func closeSocket(_ socket: Int32) -> Int32 {
        assertOnLoopThread()
        let port = localPort(of: socket)
        let wasOpen = connections.closed(socket, port: port)
        sockets.connectionClosed()
        CoalescedWrites.current?.forget(socket)
        if wasOpen, observability.isEnabled {
            observability.connectionsOpen.decrement()
            observability.logger.info(
                "APNs connection closed",
                metadata: ["apns.connection.socket": "\(socket)", "apns.connection.local_port": "\(port)"])
        }
        return Foundation.close(socket)
    }

    /// libcurl's debug callback, on the loop thread: the server sent GOAWAY on a connection.
    func receivedGoAway(_ frame: GoAway) {
        assertOnLoopThread()
        connections.receivedGoAway()
        observability.goaways.increment()
        observability.logger.notice(
            "APNs sent GOAWAY: the connection takes no new streams; later requests go on a new connection",
            metadata: ["http2.error_code": "\(frame.errorCode)", "http2.last_stream_id": "\(frame.lastStreamID)"])
    }
}
