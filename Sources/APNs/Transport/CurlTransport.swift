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

    init(configuration: TransportConfiguration, identity: ClientIdentity?) throws(CredentialError) {
        _ = curlGlobalInit
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
        var lines: [String] = []
        lines.reserveCapacity(request.headers.count + 4)
        if let authorization { lines.append("authorization: " + authorization) }
        for header in request.headers { lines.append(header.name + ": " + header.value) }
        // Remove what libcurl would add on its own, so the request is exactly the value's.
        lines.append("Accept:")
        lines.append("Content-Type:")
        lines.append("Expect:")
        let transfer = Transfer(
            url: endpoint.baseURL + request.path, method: request.method, headerLines: lines, body: request.body)
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

/// One request in flight.
///
/// `@unchecked Sendable`: the submitting task sets `continuation` before handing the transfer to
/// the loop (the inbox lock publishes it); from then on only the loop thread touches it.
final class Transfer: @unchecked Sendable {
    let url: String
    let method: APNsRequest.Method
    let headerLines: [String]
    /// The body, at a fixed address for `CURLOPT_POSTFIELDS`.
    let body: UnsafeMutableRawBufferPointer
    let errorBuffer: UnsafeMutablePointer<CChar>

    var continuation: CheckedContinuation<HTTPResponse, any Error>?
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var responseHeaders: [APNsRequest.Header] = []
    var responseBody: [UInt8] = []
    /// Loop-thread state: cancellation was asked for; the `add` was processed; the continuation
    /// was resumed.
    var cancelled = false
    var queued = false
    var finished = false
    var resubmissions = 0

    /// How often a request libcurl gave up on as never processed is queued again.
    static let maximumResubmissions = 3

    /// libcurl's verdict that the request was never taken by the server: it retried it on fresh
    /// connections (refused streams, connections closed before any byte of a response) until its
    /// own limit. See `Curl_retry_request` in libcurl.
    static func isUnprocessed(code: CURLcode, message: String) -> Bool {
        (code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR) && message.hasPrefix("Connection died, tried")
    }

    func prepareForResubmission() {
        responseHeaders.removeAll()
        responseBody.removeAll()
        errorBuffer.update(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
    }

    init(url: String, method: APNsRequest.Method, headerLines: [String], body: [UInt8]) {
        self.url = url
        self.method = method
        self.headerLines = headerLines
        self.body = UnsafeMutableRawBufferPointer.allocate(byteCount: max(body.count, 1), alignment: 1)
        self.body.copyBytes(from: body)
        self.bodyCount = body.count
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    let bodyCount: Int

    deinit {
        body.deallocate()
        errorBuffer.deallocate()
        if let headerList { curl_slist_free_all(headerList) }
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
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, [UInt8(ascii: "\r"), UInt8(ascii: "\n"), UInt8(ascii: " ")].contains(line[end - 1]) { end -= 1 }
        responseHeaders.append(.init(name: name, value: String(decoding: line[start..<end], as: UTF8.self)))
    }

    var curlMessage: String {
        String(cString: errorBuffer)
    }
}
