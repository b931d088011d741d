internal import CCurl
import Synchronization

/// One request on its way through the transport, and what is known about whether it reached a
/// server.
///
/// Delivery is decided from structure, not from libcurl's messages:
/// - libcurl calls `CURLOPT_PREREQFUNCTION` once a connection is ready and before it writes the
///   request. A transfer that fails before that call was never sent (``Delivery/notSent``).
/// - libcurl re-sends a request on a new connection when the previous attempt got no response byte,
///   for two reasons: the server refused the stream (HTTP/2 REFUSED_STREAM, or GOAWAY with a lower
///   last-stream-id — never processed), or a *reused* connection died (the server may have
///   processed it). A second pre-request call is that re-send. The transport always stops it and
///   decides itself: when the previous attempt failed without libcurl reporting an error (its error
///   buffer still empty, no new socket errno), the refusal path is the only one that gets there
///   (libcurl 7.88–8.14: `http2_handle_stream_close` sets `refused_stream` without `failf`; every
///   connection failure calls `failf`), so the transport queues the request again itself; otherwise
///   the outcome is a lost connection with ``Delivery/unknown``. A re-send that waits for a
///   connection until the deadline never reaches that call; ``wasRefusedBeforeTimingOut(_:errorBuffer:)``
///   judges it from the same facts when it times out.
///
/// `@unchecked Sendable`: the submitting side sets `completion` before handing the transfer to the
/// loop (the inbox lock publishes it); from then on only the loop thread touches its mutable state.
/// That state is `@exclusivity(unchecked)` for the same reason as ``CurlMultiLoop``'s: one thread,
/// no overlapping access, and a dynamic check on every callback was measurable.
final class Transfer: @unchecked Sendable {
    /// Who hears the result: a suspended task, or a function called on the loop thread.
    ///
    /// The task's continuation is an `UnsafeContinuation`: ``resume(_:)`` runs it at most once
    /// (``life`` becomes `finished`), and every transfer is finished exactly once (the loop's
    /// invariant, which the fault-matrix tests count). With a `CheckedContinuation` (resilient, so
    /// of unknown layout) in this enum, each copy of a transfer's completion went through runtime
    /// witnesses.
    enum Completion {
        case task(UnsafeContinuation<APNsHTTPResponse, any Error>)
        /// Called with the transfer's ``index`` in the batch it was submitted with.
        case callback(@Sendable (Int, Result<APNsHTTPResponse, any Error>) -> Void)
        /// A keep-warm transfer (``isWarmUp``), on the loop thread: nil once its connection is
        /// ready, else why none could be made.
        case warmUp(@Sendable (TransportError?) -> Void)
    }

    /// What the transport decided when libcurl wanted to send the request again.
    enum Retry {
        /// The previous attempt was refused by the server before processing: queue it again.
        case refused
        /// The connection failed after the request was written: the outcome is unknown.
        case connectionDied
        /// Cancelled before anything was written: abort quietly.
        case cancelled
        /// The server did not agree to HTTP/2 (ALPN): stopped before anything was written.
        case notHTTP2
        /// A keep-warm transfer reached a ready HTTP/2 connection and stopped there, as it always does.
        case warmedUp
        /// libcurl was about to write it to a connection the loop has shut down as stalled, or is
        /// retiring: stopped before anything was written, and queued again for a new connection.
        case stalledConnection
        /// It waited for a stream or a connection until too little of its time was left for an
        /// answer (``TransferDeadline/lastWrite``): stopped before anything was written, and ended
        /// not sent.
        case tooLate
    }

    /// The local ports of connections the loop shut down as stalled or is retiring, shared by all
    /// its transfers (loop thread only): a request is never written to one of them, though
    /// libcurl, which has not noticed yet, would offer it.
    final class StalledPorts {
        @exclusivity(unchecked) var ports: Set<Int32> = []
    }

    /// The URL in three parts, written one after the other when the request is configured, so no
    /// URL string is built per push: the endpoint's origin (`https://host:port`, which the easy
    /// handle's parsed URL may already hold), the path and a suffix of it (a batch's shared
    /// `/3/device/` and each request's token); and whether the path is one libcurl's URL parser
    /// leaves as it is (``CurlMultiLoop/isPlainPath(_:)``).
    let origin: String
    let path: String
    let pathSuffix: String
    let pathIsPlain: Bool
    let method: APNsRequest.Method
    /// Shared by every transfer with the same headers.
    let headerList: HeaderList
    let body: RequestBody
    /// Its position in the batch it was submitted with, handed back to its callback.
    let index: Int
    /// The group it was submitted with, cancelled together (``CurlMultiLoop/Operation/cancelGroup(_:)``).
    let group: TransferGroup?
    /// When it was handed over, when the send gives up (set when the send is made) and when it
    /// may last be written: ``TransferDeadline/verdict(at:)`` is the one judgement on them.
    let time: TransferDeadline
    /// When the send gives up, wherever the request is waiting.
    var deadline: ContinuousClock.Instant { time.deadline }

    @exclusivity(unchecked) var completion: Completion?
    @exclusivity(unchecked) private(set) var easy: UnsafeMutableRawPointer?
    /// The easy handle's `CURLOPT_ERRORBUFFER`.
    @exclusivity(unchecked) private(set) var errorBuffer: UnsafeMutablePointer<CChar>?
    @exclusivity(unchecked) private(set) var responseHeaders: [APNsRequest.Header] = []
    /// The answer's body, up to ``maximumResponseBody`` bytes; the rest is read and dropped.
    @exclusivity(unchecked) private(set) var responseBody: [UInt8] = []
    /// Where the transfer is in its life (loop thread only).
    ///
    /// It moves forward one step at a time — ``taken()``, ``willSend(localPort:)``, ``resume(_:)``
    /// — except that a request the server refused before processing it goes back from `written`
    /// to `queued` to be sent again (``prepareForResubmission()``); a transfer can finish from any
    /// step, and only once.
    enum Life: Equatable {
        /// Handed to the loop, which has not taken it in yet: a cancellation is answered when it does.
        case submitted
        /// Taken in by the loop, waiting for its turn or inside libcurl; nothing of it written.
        case queued
        /// libcurl was about to write it on a ready connection: it may have reached a server.
        case written(WrittenOn)
        /// Its result was delivered.
        case finished
    }

    /// What the transfer knows of the connection it was written on, from the moment it was.
    struct WrittenOn: Equatable {
        /// The connection (its local port).
        let localPort: Int32
        /// The socket errno libcurl had recorded when the request was written: a re-send with the
        /// same one, and no error reported, is libcurl's answer to a refused stream.
        let baselineErrno: Int
        /// TLS negotiated HTTP/2 (ALPN h2): its answer is HTTP/2 without asking libcurl again.
        let negotiatedH2: Bool
        /// When (on the loop's clock): its answer's time from here is the pool's round trip at
        /// best (``CycleWatch``).
        let at: ContinuousClock.Instant
    }

    @exclusivity(unchecked) private(set) var life = Life.submitted
    /// Cancellation was asked for (loop thread). Not a step of its life: it is asked at any step,
    /// and each step answers it differently (``CurlMultiLoop/cancel(_:on:)``).
    @exclusivity(unchecked) private(set) var cancelled = false
    /// Pre-request calls in the current libcurl run.
    @exclusivity(unchecked) private(set) var attempts = 0
    @exclusivity(unchecked) private(set) var retry: Retry?
    /// Times it was queued again after a refusal (``prepareForResubmission()``).
    private(set) var resubmissions = 0
    /// The circuit breaker's probe in this libcurl run: its outcome opens or closes the circuit.
    @exclusivity(unchecked) private(set) var isProbe = false
    /// Opens (or checks) a connection and writes nothing: the pre-request callback always stops it.
    let isWarmUp: Bool
    /// The loop's ``StalledPorts``, set when the transfer is started.
    @exclusivity(unchecked) private(set) var stalledPorts: StalledPorts?
    /// The loop's clock (``CurlMultiLoop/clock``), for the deadline's verdict just before the
    /// request is written.
    let clock: any WaitClock

    /// A guard against pathological loops; the deadline is what normally ends resubmission.
    static let maximumResubmissions = 100
    /// The most of an answer's body a transfer keeps: 1 MiB. APNs' longest answer is the list of
    /// an environment's channels (<doc:ProtocolReference#Broadcast-channels>: at most 10,000 ids,
    /// base64 of a few dozen characters each, so a few hundred KB as JSON); its errors are a few
    /// dozen bytes, of which ``APNsRejection`` keeps 4,096. Past the limit the transfer still reads
    /// the body to its end (the stream and the connection stay usable) and drops it, so a broken
    /// server or proxy that streams megabytes cannot make one send hold them.
    static let maximumResponseBody = 1 << 20

    init(
        origin: String, path: String, pathSuffix: String = "", pathIsPlain: Bool, method: APNsRequest.Method,
        headerList: HeaderList,
        body: RequestBody,
        deadline: ContinuousClock.Instant, submittedAt: ContinuousClock.Instant, clock: any WaitClock, index: Int = 0,
        group: TransferGroup? = nil, isWarmUp: Bool = false
    ) {
        self.clock = clock
        time = TransferDeadline(submittedAt: submittedAt, deadline: deadline)
        self.isWarmUp = isWarmUp
        self.origin = origin
        self.path = path
        self.pathSuffix = pathSuffix
        self.pathIsPlain = pathIsPlain
        self.method = method
        self.headerList = headerList
        self.body = body
        self.index = index
        self.group = group
    }

    /// Whether the request has been given up on (cancelled directly or with its group).
    var isCancelled: Bool { cancelled || group?.isCancelled == true }

    /// The result was delivered.
    var isFinished: Bool {
        if case .finished = life { return true }
        return false
    }
    /// The connection the request was written on, while it is written: it may have reached a
    /// server (libcurl was about to write it, and no refusal since proved otherwise).
    var writtenOn: WrittenOn? {
        if case .written(let connection) = life { return connection }
        return nil
    }
    var isWritten: Bool { writtenOn != nil }
    /// The local port of the connection it is written on; 0 while it is not written.
    var localPort: Int32 { writtenOn?.localPort ?? 0 }

    /// What a failure now would mean for delivery.
    var delivery: Delivery { isWritten ? .unknown : .notSent }

    /// The loop started it in libcurl on `easy`, whose error buffer libcurl writes, beside the
    /// loop's stalled connections (which it is never written to); `probe`: the circuit breaker's
    /// probe in this libcurl run.
    func attach(to easy: UnsafeMutableRawPointer, stalledPorts: StalledPorts, probe: Bool) {
        self.easy = easy
        self.stalledPorts = stalledPorts
        isProbe = probe
    }

    /// Its easy handle's error buffer, once the loop has cleared it for this run.
    func useErrorBuffer(_ buffer: UnsafeMutablePointer<CChar>?) { errorBuffer = buffer }

    /// It left libcurl (finished, cancelled or taken out): its easy handle goes back to the loop.
    func detach() {
        easy = nil
        errorBuffer = nil
    }

    /// Cancellation was asked for, on the loop thread (``CurlMultiLoop/cancel(_:on:)`` answers
    /// it as its step allows).
    func askCancellation() { cancelled = true }

    /// libcurl delivered part of the answer's body: kept up to ``maximumResponseBody`` bytes, the
    /// rest dropped.
    func receivedBody(_ bytes: UnsafeRawBufferPointer) {
        let room = Transfer.maximumResponseBody - responseBody.count
        if room > 0 { responseBody.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.prefix(room))) }
    }

    /// The loop took the transfer in (it waits for its turn, or goes to libcurl now).
    func taken() {
        if case .submitted = life { life = .queued }
    }

    /// `CURLOPT_PREREQFUNCTION`: libcurl is about to write the request on a ready connection.
    /// Returns `CURL_PREREQFUNC_OK` or `CURL_PREREQFUNC_ABORT`.
    func willSend(localPort: Int32) -> Int32 {
        attempts += 1
        if isWarmUp {
            retry = easy.map { ccurl_negotiated_h2($0) != 0 } == true ? .warmedUp : .notHTTP2
            return Int32(CURL_PREREQFUNC_ABORT)
        }
        var osErrno = 0
        if let easy { _ = ccurl_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osErrno) }
        if attempts == 1 {
            if isCancelled {
                retry = .cancelled
                return Int32(CURL_PREREQFUNC_ABORT)
            }
            if let stalled = stalledPorts?.ports, !stalled.isEmpty, stalled.contains(localPort) {
                retry = .stalledConnection
                return Int32(CURL_PREREQFUNC_ABORT)
            }
            // APNs speaks HTTP/2 only: never write a request to a server that chose HTTP/1.1.
            let alpn = easy.map { ccurl_negotiated_h2($0) } ?? -1
            if alpn == 0 {
                retry = .notHTTP2
                return Int32(CURL_PREREQFUNC_ABORT)
            }
            let now = clock.now
            guard case .writable = time.verdict(at: now) else {
                retry = .tooLate
                return Int32(CURL_PREREQFUNC_ABORT)
            }
            if !isFinished {
                life = .written(
                    WrittenOn(localPort: localPort, baselineErrno: osErrno, negotiatedH2: alpn == 1, at: now))
            }
            return Int32(CURL_PREREQFUNC_OK)
        }
        // libcurl's own re-send: decide it here, never let it happen unseen.
        let errorReported = (errorBuffer?.pointee ?? 0) != 0
        retry = !errorReported && osErrno == writtenOn?.baselineErrno ? .refused : .connectionDied
        return Int32(CURL_PREREQFUNC_ABORT)
    }

    /// Whether a request that timed out in libcurl's own re-send had been refused before it.
    ///
    /// The pre-request callback judges a re-send (``willSend(localPort:)``), but a re-send that
    /// waits for a connection until the deadline never reaches it. Then three facts, read when the
    /// transfer ends with `CURLE_OPERATION_TIMEDOUT`, give the same judgement:
    /// - libcurl did re-send it: a retry goes through libcurl's follow path, the only place that sets
    ///   `CURLINFO_REDIRECT_TIME_T` (this transport never follows a redirect; libcurl 7.80–8.21);
    /// - the timeout is the first failure libcurl reported in the run: libcurl writes the error
    ///   buffer once per run, and the buffer holds one of its timeout messages
    ///   (``timeoutMessages``) — so the attempt that came before ended without a reported failure;
    /// - the socket errno is the one recorded when the request was written.
    ///
    /// As in ``willSend(localPort:)``, an attempt that ends without a reported failure or a new
    /// errno and is re-sent is the refusal path (every connection failure calls `failf`): the
    /// server never processed the request, so it was not sent. Anything else stays unknown.
    func wasRefusedBeforeTimingOut(_ easy: UnsafeMutableRawPointer, errorBuffer: UnsafePointer<CChar>?) -> Bool {
        guard let writtenOn, attempts == 1, !isWarmUp, let errorBuffer, errorBuffer.pointee != 0 else {
            return false
        }
        var retriedAfter: curl_off_t = 0
        guard ccurl_easy_getinfo_off_t(easy, CURLINFO_REDIRECT_TIME_T, &retriedAfter) == CURLE_OK, retriedAfter > 0
        else {
            return false
        }
        var osErrno = 0
        guard ccurl_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osErrno) == CURLE_OK, osErrno == writtenOn.baselineErrno
        else {
            return false
        }
        let message = String(cString: errorBuffer).lowercased()
        return Transfer.timeoutMessages.contains { message.contains($0) }
    }

    /// What libcurl 7.80–8.21 writes, lowercased, for `CURLE_OPERATION_TIMEDOUT` ("Operation timed
    /// out after", "Failed to resolve host '…' with timeout after", "Connection timeout after",
    /// "name lookup timed out", `curl_easy_strerror`'s "Timeout was reached"). A socket's own
    /// ETIMEDOUT also reads "timed out", but it changes the errno, which the judgement checks first.
    static let timeoutMessages = ["timed out", "timeout after", "timeout was reached"]

    /// Clears what one libcurl run left behind, before the transfer is queued again.
    func prepareForResubmission() {
        responseHeaders.removeAll()
        responseBody.removeAll()
        attempts = 0
        retry = nil
        if isWritten { life = .queued }
        isProbe = false
        resubmissions += 1
    }

    /// Delivers the result, once.
    func resume(_ result: Result<APNsHTTPResponse, any Error>) {
        guard !isFinished else { return }
        life = .finished
        switch completion {
        case .task(let continuation)?: continuation.resume(with: result)
        case .callback(let deliver)?: deliver(index, result)
        case .warmUp(let done)?:
            switch result {
            case .success: done(nil)
            case .failure(let error as TransportError): done(error)
            case .failure(let error): done(TransportError(kind: .other, delivery: .notSent, message: "\(error)"))
            }
        case nil: break
        }
        completion = nil
    }

    /// Ends a keep-warm transfer that reached a ready connection (it never gets a response).
    func resumeWarmedUp() {
        guard !isFinished else { return }
        life = .finished
        if case .warmUp(let done)? = completion { done(nil) }
        completion = nil
    }

    /// One raw header line from libcurl: a status line starts a new response, anything else is
    /// `name: value`.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        // The status line ("HTTP/2 200"), which has no colon, starts a new response. (Compared byte
        // by byte: this runs for every header line of every response.)
        if line.count >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {
            responseHeaders.removeAll()
            return
        }
        var colon = 0
        while colon < line.count, line[colon] != UInt8(ascii: ":") { colon += 1 }
        guard colon < line.count else { return }
        // HTTP/2 header names arrive in lowercase; lowercase only when a server sent otherwise.
        let rawName = UnsafeRawBufferPointer(rebasing: line[..<colon])
        let name: String
        if let known = Transfer.knownHeaderName(rawName) {
            name = known  // APNs' own headers: no new string
        } else if rawName.contains(where: { (65...90).contains($0) }) {
            name = String(decoding: rawName, as: UTF8.self).lowercased()
        } else {
            name = String(decoding: rawName, as: UTF8.self)
        }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start,
            line[end - 1] == UInt8(ascii: "\r") || line[end - 1] == UInt8(ascii: "\n")
                || line[end - 1] == UInt8(ascii: " ")
        {
            end -= 1
        }
        // Room for APNs' few headers at once, not one reallocation per header.
        if responseHeaders.capacity == 0 { responseHeaders.reserveCapacity(4) }
        responseHeaders.append(.init(name: name, value: String(decoding: line[start..<end], as: UTF8.self)))
    }

    /// The known header `rawName` spells, if it is one: those of one length are compared, byte by
    /// byte (APNs' own have a length each, so that is one comparison at most).
    private static func knownHeaderName(_ rawName: UnsafeRawBufferPointer) -> String? {
        guard rawName.count < knownHeaderNames.count else { return nil }
        for known in knownHeaderNames[rawName.count] {
            var index = 0
            while index < rawName.count, known.bytes[index] == rawName[index] { index += 1 }
            if index == rawName.count { return known.name }
        }
        return nil
    }

    /// The response headers APNs sends, as they arrive (lowercase), by the length of their name.
    private static let knownHeaderNames: [[(name: String, bytes: [UInt8])]] = {
        let names = [APNsRequest.Header.Name.apnsID, .apnsUniqueID, .contentType, .retryAfter].map(\.rawValue)
        let longest = names.map(\.utf8.count).max() ?? 0
        var byLength = Array(repeating: [(name: String, bytes: [UInt8])](), count: longest + 1)
        for name in names { byLength[name.utf8.count].append((name, Array(name.utf8))) }
        return byLength
    }()

    /// The transport failure libcurl reported with `code`, classified by the code alone.
    static func failure(code: CURLcode, message: String, delivery: Delivery) -> TransportError {
        let kind: TransportError.Kind
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: kind = .dns
        case CURLE_COULDNT_CONNECT: kind = .connect
        case CURLE_OPERATION_TIMEDOUT: kind = .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED:
            kind = .tls
        case CURLE_PARTIAL_FILE, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING: kind = .connectionLost
        case CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_WEIRD_SERVER_REPLY: kind = .protocolError
        default: kind = .other
        }
        return TransportError(kind: kind, delivery: delivery, curlCode: Int(code.rawValue), message: message)
    }
}

/// Transfers submitted together (a bulk send's, as the transport sees them): cancelling the group
/// cancels its transfers wherever they are, refuses any submitted with it later, and cancels the
/// tasks that wait on its behalf (a device's wait before a retry, ``waiting(_:)``).
///
/// Thread safety: `Sendable`; `cancel()` may be called from any thread; the waiting tasks are
/// behind a `Locked` (a pthread mutex, which ThreadSanitizer follows, unlike `Mutex`'s futex).
final class TransferGroup: Sendable {
    private let cancelledFlag = Atomic<Bool>(false)
    private let waits = Locked(Waits())

    private struct Waits {
        var next = 0
        var tasks: [Int: Task<Void, Never>] = [:]
    }

    var isCancelled: Bool { cancelledFlag.load(ordering: .acquiring) }

    func cancel() {
        cancelledFlag.store(true, ordering: .releasing)
        let tasks = waits.withLock { waits in
            defer { waits.tasks.removeAll() }
            return Array(waits.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    /// Runs `body` on a task of its own that the group's cancellation cancels (at once, if the
    /// group is already cancelled).
    func waiting(_ body: @escaping @Sendable () async -> Void) {
        let kept = waits.withLock { waits -> Bool in
            guard !isCancelled else { return false }
            let id = waits.next
            waits.next += 1
            // Made under the lock, so it is registered before its end can remove it.
            waits.tasks[id] = Task { [self] in
                await body()
                self.waits.withLock { _ = $0.tasks.removeValue(forKey: id) }
            }
            return true
        }
        if !kept { Task { await body() }.cancel() }
    }
}
