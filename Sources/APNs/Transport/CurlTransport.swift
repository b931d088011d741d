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
        let transfer = Transfer(
            url: endpoint.baseURL + request.path, method: request.method,
            headerList: headerList(authorization: authorization, headers: request.headers),
            body: RequestBody(request.body), deadline: .now + requestTimeout, device: nil, owner: nil)
        try Task.checkCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.completion = .task(continuation)
                loop.submit(.add(transfer))
            }
        } onCancel: {
            loop.submit(.cancel(transfer))
        }
    }

    /// Starts `template` once per device, each to the device's path, with no task per request:
    /// `completion` is called on the transport's thread with each device's result, and must return
    /// quickly. The batch shares one header list and one copy of the body. Every device gets
    /// exactly one call, including when the transfer fails, times out or is cancelled with
    /// ``cancelAll(ownedBy:)``.
    func submit(
        _ template: APNsRequest, to devices: [Device], endpoint: APNsEnvironment.Endpoint, authorization: String?,
        owner: ObjectIdentifier, completion: @escaping @Sendable (Device?, Result<HTTPResponse, any Error>) -> Void
    ) {
        guard !devices.isEmpty else { return }
        let headers = headerList(authorization: authorization, headers: template.headers)
        let body = RequestBody(template.body)
        let deadline = ContinuousClock.now + requestTimeout
        let base = endpoint.baseURL
        var transfers: [Transfer] = []
        transfers.reserveCapacity(devices.count)
        for device in devices {
            let transfer = Transfer(
                url: base + device.path, method: template.method, headerList: headers, body: body,
                deadline: deadline, device: device, owner: owner)
            transfer.completion = .callback(completion)
            transfers.append(transfer)
        }
        loop.submit(batch: transfers)
    }

    /// Cancels every transfer started by ``submit(_:to:endpoint:authorization:owner:completion:)``
    /// with `owner`: in flight or queued, each completes with `CancellationError`.
    func cancelAll(ownedBy owner: ObjectIdentifier) {
        loop.submit(.cancelOwned(owner))
    }

    /// The shared list when the headers are those of the last request, else a new one.
    private func headerList(authorization: String?, headers: [APNsRequest.Header]) -> HeaderList {
        lastHeaders.withLock { last -> HeaderList in
            if let last, last.key.authorization == authorization, last.key.headers == headers { return last.list }
            let list = HeaderList(authorization: authorization, headers: headers)
            last = (HeaderKey(authorization: authorization, headers: headers), list)
            return list
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

/// One request in flight.
///
/// `@unchecked Sendable`: the submitting side sets `completion` before handing the transfer to
/// the loop (the inbox lock publishes it); from then on only the loop thread touches it.
final class Transfer: @unchecked Sendable {
    /// Who hears the result: a suspended task, or a function called on the loop thread.
    enum Completion {
        case task(CheckedContinuation<HTTPResponse, any Error>)
        case callback(@Sendable (Device?, Result<HTTPResponse, any Error>) -> Void)
    }

    let url: String
    let method: APNsRequest.Method
    /// Shared by every transfer with the same headers.
    let headerList: HeaderList
    let body: RequestBody
    /// The device of a bulk transfer, handed back to its callback.
    let device: Device?
    /// The bulk send it belongs to, for ``CurlMultiLoop/Operation/cancelOwned(_:)``.
    let owner: ObjectIdentifier?

    var completion: Completion?
    var easy: UnsafeMutableRawPointer?
    var responseHeaders: [APNsRequest.Header] = []
    var responseBody: [UInt8] = []
    /// Loop-thread state: cancellation was asked for; the `add` was processed; the result was
    /// delivered.
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

    init(
        url: String, method: APNsRequest.Method, headerList: HeaderList, body: RequestBody,
        deadline: ContinuousClock.Instant, device: Device?, owner: ObjectIdentifier?
    ) {
        self.url = url
        self.method = method
        self.headerList = headerList
        self.body = body
        self.deadline = deadline
        self.device = device
        self.owner = owner
    }

    /// Delivers the result, once.
    func resume(_ result: Result<HTTPResponse, any Error>) {
        guard !finished else { return }
        finished = true
        switch completion {
        case .task(let continuation)?: continuation.resume(with: result)
        case .callback(let deliver)?: deliver(device, result)
        case nil: break
        }
        completion = nil
    }

    /// One raw header line from libcurl: a status line starts a new response (libcurl may retry a
    /// refused stream on a new connection), anything else is `name: value`.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        // The status line ("HTTP/2 200"), which has no colon, starts a new response.
        if line.starts(with: "HTTP/".utf8) {
            responseHeaders.removeAll()
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        // HTTP/2 header names arrive in lowercase; lowercase only when a server sent otherwise.
        let rawName = line[..<colon]
        let name = rawName.contains(where: { (65...90).contains($0) })
            ? String(decoding: rawName, as: UTF8.self).lowercased() : String(decoding: rawName, as: UTF8.self)
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, line[end - 1] == UInt8(ascii: "\r") || line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: " ") {
            end -= 1
        }
        responseHeaders.append(.init(name: name, value: String(decoding: line[start..<end], as: UTF8.self)))
    }

}
