internal import CCurl
import Foundation

/// libcurl's one-time global initialisation, done before the first transport starts (after
/// OpenSSL's own, which decides how OpenSSL cleans up at exit: ``OpenSSL/initialized``).
private let curlGlobalInit: Int = {
    _ = OpenSSL.initialized
    return Int(curl_global_init(Int(CURL_GLOBAL_ALL)).rawValue)
}()

/// Sends ``APNsRequest``s over HTTP/2 with libcurl's multi interface: many concurrent streams on
/// one connection per host (`CURLPIPE_MULTIPLEX`, `CURLOPT_PIPEWAIT`), driven by one thread.
///
/// Thread safety: `perform` may be called from any task; everything libcurl touches lives on the
/// transport's own thread (see ``CurlMultiLoop``). ``shutdown(gracePeriod:)`` drains and releases
/// it; releasing the transport without it starts the same shutdown without waiting for it.
final class CurlTransport: Sendable {
    private let loop: CurlMultiLoop
    /// The loop's clock (``CurlMultiLoop/clock``): a transfer's time counts from its reading.
    private let clock: any WaitClock
    let requestTimeout: Duration
    let shutdownGracePeriod: Duration
    /// Whether the connector's `Service.run()` keeps a connection open (``keepWarm(_:)``).
    let keepsConnectionWarm: Bool
    /// Consecutive requests with the same headers (a bulk send, one notification to many devices)
    /// share one `curl_slist`, and a bulk send's batches one copy of the body (which the loop then
    /// sets on an easy handle only once).
    private let lastHeaders = LastValue<HeaderKey, HeaderList>()
    private let lastBody = LastValue<[UInt8], RequestBody>()

    private struct HeaderKey: Equatable, Sendable {
        var authorization: String?
        var headers: [APNsRequest.Header]
    }

    init(
        configuration: TransportConfiguration, identity: ClientIdentity?, observability: Observability
    ) throws(APNsError) {
        _ = curlGlobalInit
        let libcurl: Libcurl
        do throws(TransportError) { libcurl = try Libcurl.loaded.get() } catch { throw .transport(error) }
        try configuration.validate()
        if case .explicit(let endpoint) = configuration.proxy.route, endpoint.scheme == .https,
            !libcurl.carriesHTTP2ThroughAnHTTPSProxy
        {
            throw .transport(
                TransportError(
                    kind: .unsupportedLibcurl, delivery: .notSent,
                    message: "libcurl \(libcurl.version) stalls HTTP/2 connections through an HTTPS proxy (libcurl's "
                        + "known bug, gone in \(Libcurl.connectionFilters)): use an HTTP proxy (Proxy.http: TLS to APNs "
                        + "still runs end to end through its tunnel) or libcurl \(Libcurl.connectionFilters) or later. "
                        + Libcurl.installAdvice))
        }
        requestTimeout = configuration.requestTimeout
        clock = configuration.waitClock.clock
        shutdownGracePeriod = configuration.shutdownGracePeriod
        keepsConnectionWarm = configuration.keepsConnectionWarm && libcurl.keepsAConnectionNothingWasWrittenOn
        var trustedCA: [UInt8]?
        if let source = configuration.trustedCertificateAuthority {
            do throws(CredentialError) { trustedCA = try OpenSSL.load(source) } catch { throw .credential(error) }
        }
        // Read once: the proxy it names (if the route is the environment's) is applied from this.
        let environment = ProcessInfo.processInfo.environment
        var proxyCA: [UInt8]?
        if case .explicit(let endpoint) = configuration.proxy.route, let source = endpoint.trustedCertificateAuthority {
            do throws(CredentialError) { proxyCA = try OpenSSL.load(source) } catch { throw .credential(error) }
        }
        do throws(TransportError) {
            loop = try CurlMultiLoop(
                settings: .init(
                    connectTimeoutMilliseconds: configuration.connectTimeout.millisecondsRoundedUp,
                    maximumIdleSeconds: Int(configuration.maximumIdleTime.components.seconds),
                    tcpKeepAliveSeconds: configuration.tcpKeepAliveInterval.map { max(1, Int($0.components.seconds)) },
                    circuitBreaker: configuration.circuitBreaker,
                    trustedCA: trustedCA, identity: identity, proxy: configuration.proxy,
                    environmentProxy: Proxy.EnvironmentRoute(environment), proxyCA: proxyCA,
                    observability: observability,
                    reportsGoAway: configuration.reportsGoAway && libcurl.reportsGoAway,
                    memoryTrimInterval: configuration.memoryTrimInterval, clock: configuration.waitClock.clock,
                    streamIdle: configuration.streamIdle),
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                additionalConnectionsWhenSlow: configuration.additionalConnectionsWhenSlow,
                maximumConcurrentStreams: configuration.maximumConcurrentStreams,
                judgement: configuration.poolJudgement)
        } catch {
            throw .transport(error)
        }
        if observability.isEnabled, let route = Self.proxyRoute(configuration.proxy, environment: environment) {
            observability.logger.info("APNs connections go through a proxy", metadata: ["apns.proxy": "\(route)"])
            if case .environment = configuration.proxy.route, route.lowercased().hasPrefix("https://"),
                !libcurl.carriesHTTP2ThroughAnHTTPSProxy
            {
                // An explicit HTTPS proxy is refused above; one the environment names is only
                // warned of, as it was when libcurl read the environment itself.
                observability.logger.warning(
                    "APNs connections may stall: this libcurl stalls HTTP/2 through an HTTPS proxy, and the environment names one",
                    metadata: [
                        "apns.proxy": "\(route)", "curl.version": "\(libcurl.version)",
                        "apns.proxy.needs": "libcurl \(Libcurl.connectionFilters), or an http:// proxy",
                    ])
            }
        }
        if observability.isEnabled, configuration.keepsConnectionWarm, !keepsConnectionWarm {
            observability.logger.notice(
                "APNs keep-warm is off: this libcurl closes a connection nothing was written on; the first send connects",
                metadata: [
                    "curl.version": "\(libcurl.version)",
                    "apns.keep_warm.needs": "libcurl \(Libcurl.connectionFilters)",
                ])
        }
        if observability.isEnabled {
            observability.logger.debug(
                "APNs connection keepalive: \(CurlTransport.keepalive(configuration, libcurl: libcurl))",
                metadata: ["curl.version": "\(libcurl.version)"])
        }
    }

    /// The proxy connections will use, as the connector logs it once (credentials redacted): the
    /// explicit one, or the one the environment names (with `no_proxy`, which may exempt APNs'
    /// host); nil for none.
    static func proxyRoute(
        _ proxy: Proxy, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        switch proxy.route {
        case .direct: return nil
        case .explicit: return proxy.description
        case .environment:
            let route = Proxy.EnvironmentRoute(environment)
            guard let proxy = route.proxy else { return nil }
            let exempt = route.noProxy.map { ", except no_proxy: \($0)" } ?? ""
            return "\(Proxy.redacting(proxy.url)) (from \(proxy.variable))" + exempt
        }
    }

    /// Which keepalive the transport uses on idle connections, as it logs once when it is made.
    /// No HTTP/2 PING: libcurl 7.80–8.9 cannot send one on a multi handle's connections, and from
    /// 8.10 to at least 8.21 `curl_easy_upkeep` queues one that is written only with the
    /// connection's next request (``Libcurl``).
    static func keepalive(_ configuration: TransportConfiguration, libcurl: Libcurl) -> String {
        var parts: [String] = []
        if let tcp = configuration.tcpKeepAliveInterval {
            parts.append("TCP keepalive every \(tcp)")
        } else {
            parts.append("TCP keepalive off")
        }
        if !configuration.keepsConnectionWarm {
            parts.append("no keep-warm")
        } else if !libcurl.keepsAConnectionNothingWasWrittenOn {
            parts.append("no keep-warm (it needs libcurl \(Libcurl.connectionFilters))")
        } else {
            parts.append("idle sockets watched and a connection kept warm while run as a service")
        }
        parts.append("no HTTP/2 PING (no libcurl writes one on an idle connection)")
        return parts.joined(separator: "; ")
    }

    deinit { loop.beginShutdown(gracePeriod: .zero) }

    /// Stops taking requests, lets those in flight finish for up to `gracePeriod`, fails the rest
    /// (``TransportError/Kind-swift.struct/shutDown``), and returns once libcurl is released.
    func shutdown(gracePeriod: Duration) async {
        await loop.shutdown(gracePeriod: gracePeriod)
    }

    /// Until shutdown, keeps a connection to `endpoint` open and ready without writing anything on
    /// it (``CurlMultiLoop/keepWarm(origin:)``).
    func keepWarm(_ endpoint: APNsEnvironment.Endpoint) {
        loop.keepWarm(origin: endpoint.baseURL)
    }

    /// The transport's thread as a task executor (see ``CurlMultiLoop``).
    var taskExecutor: any TaskExecutor { loop }

    /// Requests the transport hands to libcurl at once with every connection it may carry, added
    /// ones included; more wait in its queue.
    var capacity: Int { loop.capacity }

    /// Connections libcurl has opened so far (`CURLINFO_NUM_CONNECTS`, summed over requests).
    var connectionsOpened: Int { loop.connectionsOpened }
    var slowCycles: Int { loop.slowCycles }
    /// Connections the pool added while slow, and took away again (``PoolGrowth``).
    var connectionsAdded: Int { loop.connectionsAdded }
    var connectionsRetired: Int { loop.connectionsRetired }
    var easyHandleCount: Int { loop.easyHandleCount }

    /// Connections shut down because they stopped answering.
    var stalledConnectionsClosed: Int { loop.stalledConnectionsClosed }

    /// Times the circuit breaker opened.
    var circuitTrips: Int { loop.circuitTrips }

    /// Times the loop took its inbox (for tests: an idle loop sleeps).
    var inboxTakes: Int { loop.inboxTakes }

    /// Sends `request` to `endpoint`, adding `authorization` when given, giving up at `deadline`.
    func perform(
        _ request: APNsRequest, endpoint: APNsEnvironment.Endpoint, authorization: String?,
        deadline: ContinuousClock.Instant
    ) async throws -> APNsHTTPResponse {
        let transfer = makeTransfer(request, endpoint: endpoint, authorization: authorization, deadline: deadline)
        if Task.isCancelled { throw TransportError.cancelled(delivery: .notSent) }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                transfer.completion = .task(continuation)
                loop.submit(.add(transfer))
            }
        } onCancel: {
            loop.submit(.cancel(transfer))
        }
    }

    /// Out of line, so that building the header list does not grow the async frame of every send
    /// in flight.
    @inline(never)
    private func makeTransfer(
        _ request: APNsRequest, endpoint: APNsEnvironment.Endpoint, authorization: String?,
        deadline: ContinuousClock.Instant
    ) -> Transfer {
        Transfer(
            origin: endpoint.baseURL, path: request.path, pathIsPlain: CurlMultiLoop.isPlainPath(request.path),
            method: request.method, headerList: headerList(authorization: authorization, headers: request.headers),
            body: RequestBody(request.body), deadline: deadline, submittedAt: clock.now, clock: clock)
    }

    /// Starts `template` once per device, each to the device's path (with `apnsIDs`, each carrying
    /// the apns-id at its index), with no task per request: `completion` is called on the
    /// transport's thread with each request's index and result, and must return quickly. The batch
    /// shares one header list and one copy of the body. Every request gets exactly one call,
    /// including when the transfer fails, times out or is cancelled with ``cancelAll(in:)``.
    func submit(
        _ template: APNsRequest, to devices: [Device], apnsIDs: [String]? = nil,
        endpoint: APNsEnvironment.Endpoint, authorization: String?, deadline: ContinuousClock.Instant,
        group: TransferGroup, completion: @escaping @Sendable (Int, Result<APNsHTTPResponse, any Error>) -> Void
    ) {
        guard !devices.isEmpty else { return }
        let headers = headerList(authorization: authorization, headers: template.headers)
        let body = lastBody.value(for: template.body) { RequestBody(template.body) }
        let origin = endpoint.baseURL
        var transfers: [Transfer] = []
        transfers.reserveCapacity(devices.count)
        let submittedAt = clock.now
        for (index, device) in devices.enumerated() {
            // A request's own apns-id goes in one list node ahead of the shared list.
            let transfer = Transfer(
                // A device's path is plain: `Device` holds hex digits only.
                origin: origin, path: Device.pathPrefix, pathSuffix: device.token, pathIsPlain: true,
                method: template.method,
                headerList: apnsIDs.map { HeaderList(first: HeaderList.apnsIDPrefix + $0[index], then: headers) }
                    ?? headers,
                body: body, deadline: deadline, submittedAt: submittedAt, clock: clock, index: index,
                group: group)
            transfer.completion = .callback(completion)
            transfers.append(transfer)
        }
        loop.submit(batch: transfers)
    }

    /// Cancels every transfer submitted with `group`, in flight or queued, and refuses any
    /// submitted with it later.
    func cancelAll(in group: TransferGroup) {
        group.cancel()
        loop.submit(.cancelGroup(group))
    }

    /// The shared list when the headers are those of the last request, else a new one.
    private func headerList(authorization: String?, headers: [APNsRequest.Header]) -> HeaderList {
        lastHeaders.value(for: HeaderKey(authorization: authorization, headers: headers)) {
            HeaderList(authorization: authorization, headers: headers)
        }
    }
}

/// The value made for the last key, made again only when the key changes.
///
/// Thread safety: `Sendable`; the pair is behind a mutex, and `make` runs under it.
final class LastValue<Key: Equatable & Sendable, Value: Sendable>: Sendable {
    private let last = Locked<(key: Key, value: Value)?>(nil)

    func value(for key: Key, make: () -> Value) -> Value {
        last.withLock { last in
            if let last, last.key == key { return last.value }
            let value = make()
            last = (key, value)
            return value
        }
    }
}

/// A `curl_slist` of request headers, freed with the last transfer that uses it.
///
/// `@unchecked Sendable`: the list is built in `init` and never modified; libcurl only reads it.
final class HeaderList: @unchecked Sendable {
    let list: UnsafeMutablePointer<curl_slist>?
    /// The shared list this one leads into (``init(first:then:)``), kept alive as long as this one.
    private let rest: HeaderList?
    /// The nodes this value frees: all of `list`, only its first node, or none.
    private let owned: Owned
    private enum Owned { case all, firstNode, none }

    /// The start of the header lines the transport writes itself.
    static let authorizationPrefix = APNsRequest.Header.Name.authorization.rawValue + ": "
    static let apnsIDPrefix = APNsRequest.Header.Name.apnsID.rawValue + ": "

    init(authorization: String?, headers: [APNsRequest.Header]) {
        var list: UnsafeMutablePointer<curl_slist>?
        if let authorization { list = curl_slist_append(list, HeaderList.authorizationPrefix + authorization) }
        for header in headers { list = curl_slist_append(list, header.name + ": " + header.value) }
        // Remove what libcurl would add on its own, so the request is exactly the value's.
        for removal in ["Accept:", "Content-Type:", "Expect:"] { list = curl_slist_append(list, removal) }
        self.list = list
        rest = nil
        owned = .all
    }

    /// `line`, then every header of `rest`: one node of its own whose `next` is `rest`'s first, so
    /// a request's own header costs one allocation, not a copy of the list.
    init(first line: String, then rest: HeaderList) {
        let node = curl_slist_append(nil, line)
        node?.pointee.next = rest.list
        list = node ?? rest.list  // out of memory: the shared list alone
        self.rest = rest
        owned = node == nil ? .none : .firstNode
    }

    deinit {
        guard let list else { return }
        switch owned {
        case .all: curl_slist_free_all(list)
        case .firstNode:
            list.pointee.next = nil  // the rest is the shared list's, freed with it
            curl_slist_free_all(list)
        case .none: break
        }
    }
}

/// A request body at a fixed address for `CURLOPT_POSTFIELDS`, shared by every transfer of a bulk
/// send. `@unchecked Sendable`: written in `init`, only read afterwards.
final class RequestBody: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer
    let count: Int

    init(_ body: [UInt8]) {
        bytes = .allocate(byteCount: max(body.count, 1), alignment: 1)
        bytes.copyBytes(from: body)
        count = body.count
    }

    deinit { bytes.deallocate() }
}
