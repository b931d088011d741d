internal import CCurl
import Foundation
import Synchronization

/// libcurl's one-time global initialisation, done before the first transport starts.
private let curlGlobalInit: Int = Int(curl_global_init(Int(CURL_GLOBAL_ALL)).rawValue)

/// Sends ``APNsRequest``s over HTTP/2 with libcurl's multi interface: many concurrent streams on
/// one connection per host (`CURLPIPE_MULTIPLEX`, `CURLOPT_PIPEWAIT`), driven by one thread.
///
/// Thread safety: `perform` may be called from any task; everything libcurl touches lives on the
/// transport's own thread (see ``CurlMultiLoop``). Releasing the transport stops that thread and
/// fails what was still in flight with ``TransportError/shutDown``.
final class CurlTransport: Sendable {
    private let loop: CurlMultiLoop
    private let requestTimeout: Duration
    /// The header list of the last request: consecutive requests with the same headers (a bulk
    /// send, one notification to many devices) share one `curl_slist`.
    private let lastHeaders = Mutex<(key: HeaderKey, list: HeaderList)?>(nil)

    private struct HeaderKey: Equatable {
        var authorization: String?
        var headers: [APNsRequest.Header]
    }

    init(configuration: TransportConfiguration, identity: ClientIdentity?) throws(CredentialError) {
        _ = curlGlobalInit
        requestTimeout = configuration.requestTimeout
        var trustedCA: [UInt8]?
        if let source = configuration.trustedCertificateAuthority { trustedCA = try OpenSSL.load(source) }
        loop = CurlMultiLoop(
            settings: .init(
                requestTimeoutMilliseconds: configuration.requestTimeout.milliseconds,
                connectTimeoutMilliseconds: configuration.connectTimeout.milliseconds,
                trustedCA: trustedCA, identity: identity),
            maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
            maximumConcurrentStreams: configuration.maximumConcurrentStreams)
    }

    deinit { loop.shutdown() }

    /// Requests the transport hands to libcurl at once; more wait in its queue.
    var capacity: Int { loop.maximumInFlight }

    /// Connections libcurl has opened so far (`CURLINFO_NUM_CONNECTS`, summed over requests).
    var connectionsOpened: Int { loop.connectionsOpened }

    /// Sends `request` to `endpoint`, adding `authorization` when given.
    func perform(_ request: APNsRequest, endpoint: APNsEnvironment.Endpoint, authorization: String?) async throws -> HTTPResponse {
        let key = HeaderKey(authorization: authorization, headers: request.headers)
        let headerList = lastHeaders.withLock { last -> HeaderList in
            if let last, last.key == key { return last.list }
            let list = HeaderList(authorization: authorization, headers: request.headers)
            last = (key, list)
            return list
        }
        let transfer = Transfer(
            url: endpoint.baseURL + request.path, method: request.method, headerList: headerList, body: request.body,
            deadline: .now + requestTimeout)
        try Task.checkCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.continuation = continuation
                loop.submit(.add(transfer))
            }
        } onCancel: {
            loop.submit(.cancel(transfer))
        }
    }
}

extension Duration {
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}

/// A `curl_slist` of request headers, freed with the last transfer that uses it.
///
/// `@unchecked Sendable`: the list is built in `init` and never modified; libcurl only reads it.
final class HeaderList: @unchecked Sendable {
    let list: UnsafeMutablePointer<curl_slist>?

    init(authorization: String?, headers: [APNsRequest.Header]) {
        var list: UnsafeMutablePointer<curl_slist>?
        if let authorization { list = curl_slist_append(list, "authorization: " + authorization) }
        for header in headers { list = curl_slist_append(list, header.name + ": " + header.value) }
        // Remove what libcurl would add on its own, so the request is exactly the value's.
        for removal in ["Accept:", "Content-Type:", "Expect:"] { list = curl_slist_append(list, removal) }
        self.list = list
    }

    deinit {
        if let list { curl_slist_free_all(list) }
    }
}

/// One request in flight.
///
/// `@unchecked Sendable`: the submitting task sets `continuation` before handing the transfer to
/// the loop (the inbox lock publishes it); from then on only the loop thread touches it.
final class Transfer: @unchecked Sendable {
    let url: String
    let method: APNsRequest.Method
    /// Shared by every transfer with the same headers.
    let headerList: HeaderList
    /// The body, at a fixed address for `CURLOPT_POSTFIELDS`.
    let body: UnsafeMutableRawBufferPointer

    var continuation: CheckedContinuation<HTTPResponse, any Error>?
    var easy: UnsafeMutableRawPointer?
    var responseHeaders: [APNsRequest.Header] = []
    var responseBody: [UInt8] = []
    /// Loop-thread state: cancellation was asked for; the `add` was processed; the continuation
    /// was resumed.
    var cancelled = false
    var queued = false
    var finished = false
    var resubmissions = 0
    /// Until when a request that was never processed may be queued again: its request timeout.
    let deadline: ContinuousClock.Instant

    /// A guard against pathological loops; the deadline is what normally ends resubmission.
    static let maximumResubmissions = 100

    /// libcurl's verdict that the request was never taken by the server: it retried it on fresh
    /// connections (refused streams, connections closed before any byte of a response) until its
    /// own limit. See `Curl_retry_request` in libcurl.
    static func isUnprocessed(code: CURLcode, message: String) -> Bool {
        (code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR) && message.hasPrefix("Connection died, tried")
    }

    func prepareForResubmission() {
        responseHeaders.removeAll()
        responseBody.removeAll()
    }

    init(url: String, method: APNsRequest.Method, headerList: HeaderList, body: [UInt8], deadline: ContinuousClock.Instant) {
        self.deadline = deadline
        self.url = url
        self.method = method
        self.headerList = headerList
        self.body = UnsafeMutableRawBufferPointer.allocate(byteCount: max(body.count, 1), alignment: 1)
        self.body.copyBytes(from: body)
        self.bodyCount = body.count
    }

    let bodyCount: Int

    deinit {
        body.deallocate()
    }

    /// Resumes the waiting task, once.
    func resume(_ result: Result<HTTPResponse, any Error>) {
        guard !finished else { return }
        finished = true
        continuation?.resume(with: result)
        continuation = nil
    }

    /// One raw header line from libcurl: a status line starts a new response (libcurl may retry a
    /// refused stream on a new connection), anything else is `name: value`.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        if line.starts(with: "HTTP/".utf8) {
            responseHeaders.removeAll()
            return
        }
        // HTTP/2 header names arrive in lowercase; lowercase only when a server sent otherwise.
        let rawName = line[..<colon]
        let name = rawName.contains(where: { (65...90).contains($0) })
            ? String(decoding: rawName, as: UTF8.self).lowercased() : String(decoding: rawName, as: UTF8.self)
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, [UInt8(ascii: "\r"), UInt8(ascii: "\n"), UInt8(ascii: " ")].contains(line[end - 1]) { end -= 1 }
        responseHeaders.append(.init(name: name, value: String(decoding: line[start..<end], as: UTF8.self)))
    }

}
