internal import CCurl
import Foundation

// Easy handles: starting a transfer on one, the options set once per handle and per transfer,
// and keeping or freeing it afterwards.

extension CurlMultiLoop {
    /// What the loop keeps for each easy handle: its `CURLOPT_ERRORBUFFER`; the method, body and
    /// header list its last transfer set, which the next transfer (the next device of a bulk send)
    /// usually shares: those options are set again only when they differ; and its parsed URL
    /// (``setURL(_:_:pathOffset:of:state:)``). Holding them also keeps what libcurl points at
    /// alive as long as the handle does.
    final class EasyState {
        let errorBuffer: UnsafeMutablePointer<CChar>
        @exclusivity(unchecked) var method: APNsRequest.Method?
        @exclusivity(unchecked) var body: RequestBody?
        @exclusivity(unchecked) var headerList: HeaderList?
        /// The handle's URL handle (`CURLU`, nil if libcurl could not make one), and the origin it
        /// holds while it is set as the easy handle's `CURLOPT_CURLU` (nil while it is not).
        let parsedURL: OpaquePointer? = curl_url()
        @exclusivity(unchecked) var parsedOrigin: String?

        init() {
            errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
            errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        }

        /// After `curl_easy_reset`, nothing is set.
        func forget() {
            method = nil
            body = nil
            headerList = nil
            parsedOrigin = nil
        }

        /// After the easy handle's `curl_easy_cleanup` (``discard(_:)``, shutdown).
        deinit {
            errorBuffer.deallocate()
            curl_url_cleanup(parsedURL)
        }
    }

    /// Where each request's URL is assembled, in one reused buffer (no string per push), which
    /// libcurl copies.
    ///
    /// Thread safety: none; the loop thread alone uses it.
    final class URLBuffer {
        @exclusivity(unchecked) private var bytes: [UInt8] = []

        /// Hands `body` the URL of `transfer` (origin, path, suffix), NUL-terminated, and where its
        /// path starts.
        func withURL<Result>(of transfer: Transfer, _ body: (UnsafeRawBufferPointer, Int) -> Result) -> Result {
            bytes.removeAll(keepingCapacity: true)
            bytes.append(contentsOf: transfer.origin.utf8)
            let pathOffset = bytes.count
            bytes.append(contentsOf: transfer.path.utf8)
            bytes.append(contentsOf: transfer.pathSuffix.utf8)
            bytes.append(0)
            return bytes.withUnsafeBytes { body($0, pathOffset) }
        }
    }

    func start(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        if transfer.isCancelled {
            transfer.resume(.failure(TransportError.cancelled(delivery: transfer.delivery)))
            return
        }
        streamIdleProbe?.handed()
        // The deadline counts from the send; libcurl's own timeout counts from here.
        let now = clock.now
        let remaining: Duration
        switch transfer.time.verdict(at: now) {
        case .writable(let left): remaining = left
        case .tooLateToWrite(let left) where transfer.isWarmUp: remaining = left
        case .tooLateToWrite:
            transfer.resume(.failure(TransportError.tooLateToWrite))
            return
        case .passed:
            transfer.resume(.failure(TransportError.timedOut(delivery: transfer.delivery)))
            return
        }
        // A closed breaker (nearly always) admits without reading the clock.
        var probe = false
        switch breaker?.isClosed == true ? .go : breaker?.admit(now: now) {
        case nil, .go?: break
        case .probe?: probe = true
        case .reject(let error)?:
            transfer.resume(.failure(error))
            return
        }
        let easy: UnsafeMutableRawPointer
        do throws(RefusedOption) {
            var ready = pool.takeIdle()
            if ready == nil { ready = try makeEasy() }
            guard let ready else {
                transfer.resume(
                    .failure(
                        TransportError(
                            kind: .other, delivery: transfer.delivery, curlCode: 2, message: "curl_easy_init failed")))
                return
            }
            easy = ready
            do throws(RefusedOption) {
                try configure(easy, for: transfer, timeoutMilliseconds: remaining.millisecondsRoundedUp)
            } catch {
                discard(easy)  // in an unknown state
                throw error
            }
        } catch {
            transfer.resume(.failure(error.error))
            return
        }
        transfer.attach(to: easy, stalledPorts: connections.stalled, probe: probe)
        if !transfer.isWarmUp { keepWarm.sendStarted() }
        if pool.isEmpty { idlePeriodEnds(at: now, byWarmUp: transfer.isWarmUp) }
        let added = curl_multi_add_handle(multi, easy)
        guard added == CURLM_OK else {
            transfer.detach()
            recycle(easy)
            transfer.resume(
                .failure(
                    TransportError(
                        kind: .other, delivery: transfer.delivery, curlCode: Int(added.rawValue),
                        message: String(cString: curl_multi_strerror(added)))))
            return
        }
        pool.started(transfer, on: easy)
    }

    /// A new easy handle with everything that is the same for every transfer set once: TLS,
    /// HTTP/2, callbacks, its error buffer.
    func makeEasy() throws(RefusedOption) -> UnsafeMutableRawPointer? {
        assertOnLoopThread()
        guard let easy = curl_easy_init() else { return nil }
        let state = EasyState()
        pool.made(easy, state: state)
        inbox.withLock { $0.count(easyHandles: 1) }
        do throws(RefusedOption) {
            try configureOnce(easy, errorBuffer: state.errorBuffer)
        } catch {
            discard(easy)
            throw error
        }
        return easy
    }

    /// Everything that is the same for every transfer on `easy`. Every option a guarantee rests on
    /// is checked (``RefusedOption``); only the GOAWAY watch's verbose channel may be refused
    /// quietly (it reports, it guarantees nothing).
    func configureOnce(
        _ easy: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>
    ) throws(RefusedOption) {
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_SHARE, share), "CURLOPT_SHARE")
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "CURLOPT_HTTP_VERSION")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        // A reused handle keeps its buffers for good. libcurl's upload buffer (64 KB by default,
        // allocated at the first send) is 500 × 64 KB = 32 MB for 500 streams in flight, for
        // bodies of at most 5 KB; its minimum, 16 KB, is plenty. Those buffers were most of a
        // soak's heap, whose pages the process touched bit by bit: the slow climb of its resident
        // memory (Docs/Benchmarking.md, "Buffers of reused handles").
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_UPLOAD_BUFFERSIZE, 16_384), "CURLOPT_UPLOAD_BUFFERSIZE")
        // The download buffer (CURLOPT_BUFFERSIZE) stays at libcurl's 16 KB: with 4 KB, libcurl 7.88
        // received a 40 KB answer whole and never ended the transfer (TransportTests).
        try require(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1), "CURLOPT_SSL_VERIFYPEER")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2), "CURLOPT_SSL_VERIFYHOST")
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds),
            "CURLOPT_CONNECTTIMEOUT_MS")
        try require(
            ccurl_easy_setopt_long(easy, CURLOPT_MAXAGE_CONN, settings.maximumIdleSeconds), "CURLOPT_MAXAGE_CONN")
        if let keepAlive = settings.tcpKeepAliveSeconds {
            try require(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
            try require(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPIDLE, keepAlive), "CURLOPT_TCP_KEEPIDLE")
            try require(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPINTVL, keepAlive), "CURLOPT_TCP_KEEPINTVL")
        }
        if let ca = settings.trustedCA {
            try require(
                ca.withUnsafeBytes { ccurl_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) },
                "CURLOPT_CAINFO_BLOB")
        }
        try configureProxy(easy)
        if let identity = settings.identity {
            try require(
                identity.certificateChainPEM.withUnsafeBytes {
                    ccurl_easy_setopt_blob(easy, CURLOPT_SSLCERT_BLOB, $0.baseAddress, $0.count)
                },
                "CURLOPT_SSLCERT_BLOB")
            try require(
                identity.privateKeyPEM.withUnsafeBytes {
                    ccurl_easy_setopt_blob(easy, CURLOPT_SSLKEY_BLOB, $0.baseAddress, $0.count)
                },
                "CURLOPT_SSLKEY_BLOB")
            try require(ccurl_easy_setopt_string(easy, CURLOPT_SSLCERTTYPE, "PEM"), "CURLOPT_SSLCERTTYPE")
            try require(ccurl_easy_setopt_string(easy, CURLOPT_SSLKEYTYPE, "PEM"), "CURLOPT_SSLKEYTYPE")
        }
        try require(
            ccurl_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                let length = size * count
                guard let data, let context else { return length }
                Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().receivedBody(
                    UnsafeRawBufferPointer(start: data, count: length))
                return length
            }, "CURLOPT_WRITEFUNCTION")
        try require(
            ccurl_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                let length = size * count
                guard let data, let context else { return length }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
                return length
            }, "CURLOPT_HEADERFUNCTION")
        let loop = Unmanaged.passUnretained(self).toOpaque()
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, loop), "CURLOPT_OPENSOCKETDATA")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_CLOSESOCKETDATA, loop), "CURLOPT_CLOSESOCKETDATA")
        try require(
            ccurl_easy_setopt_opensocket(easy) { context, _, address in
                guard let context, let address else { return curl_socket_t(-1) }
                return Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue()
                    .openSocket(
                        family: address.pointee.family, type: address.pointee.socktype,
                        protocol: address.pointee.protocol)
            }, "CURLOPT_OPENSOCKETFUNCTION")
        try require(
            ccurl_easy_setopt_closesocket(easy) { context, socket in
                guard let context else { return Foundation.close(socket) }
                return Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().closeSocket(socket)
            }, "CURLOPT_CLOSESOCKETFUNCTION")
        if watchesGoAway {
            // libcurl 7.88 reports a received GOAWAY only as an informational line, which needs
            // CURLOPT_VERBOSE (set per transfer in `configure`); the callback ignores everything
            // else (headers included, so the authorization header passes through it unread and
            // unkept).
            _ = ccurl_easy_setopt_pointer(easy, CURLOPT_DEBUGDATA, loop)
            _ = ccurl_easy_setopt_debug(easy) { _, type, text, size, context in
                guard type == CURLINFO_TEXT, size >= 16, let text, let context else { return 0 }
                let line = UnsafeRawBufferPointer(start: text, count: size)
                // "recveived GOAWAY, error=%d, last_stream=%u" (sic, libcurl 7.88); later versions
                // spell it "received".
                guard line[0] == UInt8(ascii: "r"), let frame = GoAway(line) else { return 0 }
                Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().receivedGoAway(frame)
                return 0
            }
        }
        try require(
            ccurl_easy_setopt_prereq(easy) { context, _, _, _, localPort in
                guard let context else { return Int32(CURL_PREREQFUNC_OK) }
                let decision = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().willSend(
                    localPort: localPort)
                if decision == Int32(CURL_PREREQFUNC_OK), let writes = CoalescedWrites.current {
                    writes.requestWillBeWritten()
                    writes.streamIdle?.filled()
                }
                return decision
            }, "CURLOPT_PREREQFUNCTION")
    }

    /// Sets what differs per transfer: every such option is set each time, so nothing carries over
    /// from the handle's previous transfer, except the method, body and headers when they are the
    /// very ones that transfer had (``EasyState``).
    func configure(
        _ easy: UnsafeMutableRawPointer, for transfer: Transfer, timeoutMilliseconds: Int
    ) throws(RefusedOption) {
        let state = pool.state(of: easy)
        state?.errorBuffer.pointee = 0
        transfer.useErrorBuffer(state?.errorBuffer)
        if watchesGoAway {
            // libcurl gives a connection made by a verbose transfer a TLS trace callback that
            // formats a line for every TLS record for the connection's whole life (most of verbose
            // mode's cost); a connection made by a quiet transfer never has
            // it. So the request that will make the next connection is configured quietly, and
            // every other request verbosely: those wait for that connection (CURLOPT_PIPEWAIT)
            // and report any GOAWAY it sends.
            let quiet = connections.makesAwaitedConnection(transfer)
            _ = ccurl_easy_setopt_long(easy, CURLOPT_VERBOSE, quiet ? 0 : 1)
        }
        try require(
            urlBuffer.withURL(of: transfer) { url, pathOffset in
                setURL(easy, url, pathOffset: pathOffset, of: transfer, state: state)
            },
            "CURLOPT_URL")
        try require(ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, timeoutMilliseconds)), "CURLOPT_TIMEOUT_MS")
        if let state, state.method == transfer.method, state.body === transfer.body {
            // The same request as the handle's last transfer: method and body are set.
        } else {
            state?.method = nil  // until all of it is set
            try setMethodAndBody(easy, for: transfer)
            state?.method = transfer.method
            state?.body = transfer.body
        }
        if state == nil || state?.headerList !== transfer.headerList {
            state?.headerList = nil
            try require(
                ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, transfer.headerList.list), "CURLOPT_HTTPHEADER")
            state?.headerList = transfer.headerList
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context), "CURLOPT_WRITEDATA")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context), "CURLOPT_HEADERDATA")
        try require(ccurl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, context), "CURLOPT_PREREQDATA")
    }

    /// Sets `transfer`'s URL, NUL-terminated in `url`, its path from `pathOffset`. Given only
    /// `CURLOPT_URL`, libcurl parses the URL again for every request and, before 8.12, writes it
    /// back out as a string one byte at a time, a large part of what a push costs at the loopback
    /// (Docs/Benchmarking.md). Given a URL handle (`CURLOPT_CURLU`), it copies the handle's parts
    /// instead. So each easy handle keeps one, which takes the origin once and then each request's
    /// path alone, when the path is plain (``isPlainPath(_:)``); anything else, or a URL handle
    /// libcurl refuses, goes as `CURLOPT_URL` alone, which libcurl parses as it always did.
    ///
    /// `CURLOPT_URL` is set either way. Before 8.12, libcurl takes the URL it reports, and the one
    /// of a request it re-sends by itself (after a refused stream), from there and not from the URL
    /// handle, so without it both would be the handle's first request's. The transport stops every
    /// such re-send before it is written (Reliability.md); were one ever let through, it must
    /// still go to its own device.
    func setURL(
        _ easy: UnsafeMutableRawPointer, _ url: UnsafeRawBufferPointer, pathOffset: Int, of transfer: Transfer,
        state: EasyState?
    ) -> CURLcode {
        guard let string = url.baseAddress?.assumingMemoryBound(to: CChar.self) else {
            return CURLE_BAD_FUNCTION_ARGUMENT  // never: the buffer holds at least the NUL
        }
        if let state {
            var parsed = false
            if transfer.pathIsPlain, let handle = state.parsedURL {
                if state.parsedOrigin == transfer.origin {
                    parsed = curl_url_set(handle, CURLUPART_PATH, string + pathOffset, 0) == CURLUE_OK
                } else if curl_url_set(handle, CURLUPART_URL, string, 0) == CURLUE_OK {
                    parsed =
                        state.parsedOrigin != nil
                        || ccurl_easy_setopt_pointer(easy, CURLOPT_CURLU, UnsafeMutableRawPointer(handle)) == CURLE_OK
                }
            }
            if parsed {
                state.parsedOrigin = transfer.origin
            } else if state.parsedOrigin != nil {
                _ = ccurl_easy_setopt_pointer(easy, CURLOPT_CURLU, nil)
                state.parsedOrigin = nil
            }
        }
        return ccurl_easy_setopt_string(easy, CURLOPT_URL, string)
    }

    /// Whether libcurl's URL parser leaves `path` as it is, so that a URL handle can take it
    /// unparsed: it starts with `/` and holds only unreserved characters (RFC 3986) and `/`, with
    /// no segment that starts with `.` (no `.` or `..` for the parser to remove). APNs' paths are
    /// all plain.
    static func isPlainPath(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { bytes in
            guard bytes.first == UInt8(ascii: "/") else { return false }
            var previous: UInt8 = 0
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"),
                    UInt8(ascii: "/"):
                    break
                case UInt8(ascii: "."):
                    if previous == UInt8(ascii: "/") { return false }
                default: return false
                }
                previous = byte
            }
            return true
        }
    }

    func setMethodAndBody(_ easy: UnsafeMutableRawPointer, for transfer: Transfer) throws(RefusedOption) {
        func setBody() throws(RefusedOption) {
            try require(ccurl_easy_setopt_long(easy, CURLOPT_POST, 1), "CURLOPT_POST")
            try require(
                ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.body.count)),
                "CURLOPT_POSTFIELDSIZE_LARGE")
            try require(
                ccurl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, transfer.body.bytes.baseAddress),
                "CURLOPT_POSTFIELDS")
        }
        switch transfer.method {
        case .post:
            try require(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil), "CURLOPT_CUSTOMREQUEST")
            try setBody()
        case .get:
            try require(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil), "CURLOPT_CUSTOMREQUEST")
            try require(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        default:
            if transfer.body.count > 0 {
                try setBody()
            } else {
                try require(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
            }
            try require(
                ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, transfer.method.rawValue), "CURLOPT_CUSTOMREQUEST"
            )
        }
    }

    /// The proxy options (``TransportConfiguration/proxy``): the environment's proxy and
    /// exemptions as the connector read them (an empty `CURLOPT_PROXY` when it names none); an
    /// empty `CURLOPT_PROXY` for none; for an explicit proxy its URL, an empty `CURLOPT_NOPROXY`
    /// (so `no_proxy` cannot bypass it), its credentials in their own options (no URL encoding to
    /// get wrong) and the CA for an HTTPS proxy.
    func configureProxy(_ easy: UnsafeMutableRawPointer) throws(RefusedOption) {
        switch settings.proxy.route {
        case .environment:
            // The environment as it was read once (``Proxy/EnvironmentRoute``): libcurl, given
            // both options, reads no variable itself.
            let route = settings.environmentProxy
            try require(ccurl_easy_setopt_string(easy, CURLOPT_PROXY, route.proxy?.url ?? ""), "CURLOPT_PROXY")
            try require(ccurl_easy_setopt_string(easy, CURLOPT_NOPROXY, route.noProxy ?? ""), "CURLOPT_NOPROXY")
        case .direct: try require(ccurl_easy_setopt_string(easy, CURLOPT_PROXY, ""), "CURLOPT_PROXY")
        case .explicit(let endpoint):
            try require(ccurl_easy_setopt_string(easy, CURLOPT_PROXY, endpoint.curlURL), "CURLOPT_PROXY")
            try require(ccurl_easy_setopt_string(easy, CURLOPT_NOPROXY, ""), "CURLOPT_NOPROXY")
            if let credentials = endpoint.credentials {
                try require(
                    ccurl_easy_setopt_string(easy, CURLOPT_PROXYUSERNAME, credentials.username), "CURLOPT_PROXYUSERNAME"
                )
                try require(
                    ccurl_easy_setopt_string(easy, CURLOPT_PROXYPASSWORD, credentials.password), "CURLOPT_PROXYPASSWORD"
                )
            }
            if let ca = settings.proxyCA {
                try require(
                    ca.withUnsafeBytes {
                        ccurl_easy_setopt_blob(easy, CURLOPT_PROXY_CAINFO_BLOB, $0.baseAddress, $0.count)
                    },
                    "CURLOPT_PROXY_CAINFO_BLOB")
            }
        }
    }

    /// The transport failure libcurl reported for `easy`: the proxy's when a proxy caused it,
    /// otherwise classified by `code` (``Transfer/failure(code:message:delivery:)``).
    func failure(of easy: UnsafeMutableRawPointer, code: CURLcode, delivery: Delivery) -> TransportError {
        proxyFailure(of: easy, code: code, delivery: delivery)
            ?? Transfer.failure(code: code, message: errorMessage(of: easy, code: code), delivery: delivery)
    }

    /// The failure a proxy caused, told as such: the tunnel refused (`CURLINFO_HTTP_CONNECTCODE`),
    /// the proxy's name unresolved, a SOCKS5 error, or (for an explicit proxy, the only host
    /// libcurl then connects to) nothing accepting the connection. Nil for any other failure.
    private func proxyFailure(of easy: UnsafeMutableRawPointer, code: CURLcode, delivery: Delivery) -> TransportError? {
        if case .direct = settings.proxy.route { return nil }
        let which = settings.proxy.description
        func failure(_ message: String) -> TransportError {
            TransportError(kind: .proxy, delivery: delivery, curlCode: Int(code.rawValue), message: message)
        }
        var connectCode = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_CONNECTCODE, &connectCode)
        if connectCode != 0, connectCode / 100 != 2 {
            let advice =
                switch connectCode {
                case 407: " (Proxy Authentication Required: give the proxy credentials it accepts)"
                case 403: " (Forbidden: the proxy does not allow a tunnel to this host and port)"
                default: ""
                }
            return failure("the proxy (\(which)) refused the tunnel to APNs with HTTP \(connectCode)\(advice)")
        }
        switch code {
        case CURLE_COULDNT_RESOLVE_PROXY:
            return failure("the proxy's host name (\(which)) did not resolve")
        case CURLE_PROXY:
            return failure("the proxy (\(which)) failed: \(errorMessage(of: easy, code: code))")
        case CURLE_COULDNT_CONNECT:
            guard case .explicit = settings.proxy.route else { return nil }
            return failure(
                "nothing accepted the connection to the proxy (\(which)): \(errorMessage(of: easy, code: code))")
        default:
            return nil
        }
    }

    /// libcurl's detail for the last failure of `easy`, or, when it wrote none, what `code` means.
    func errorMessage(of easy: UnsafeMutableRawPointer, code: CURLcode) -> String {
        let detail = pool.state(of: easy).map { String(cString: $0.errorBuffer) } ?? ""
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }

    /// Keeps a finished easy handle, still configured, for the next transfer.
    func recycle(_ easy: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        if !pool.keep(easy) { discard(easy) }
    }

    func discard(_ easy: UnsafeMutableRawPointer) {
        assertOnLoopThread()
        curl_easy_cleanup(easy)
        pool.freed(easy)
        inbox.withLock { $0.count(easyHandles: -1) }
    }
}
