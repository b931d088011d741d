internal import CCurl
import Foundation
import Synchronization

/// The thread that owns one libcurl multi handle and every easy handle on it.
///
/// Tasks hand it work through a locked inbox and wake it with `curl_multi_wakeup`; the thread adds
/// easy handles, runs `curl_multi_perform`, resumes the continuations of finished transfers and
/// sleeps in `curl_multi_poll`. No libcurl call happens anywhere else.
///
/// `@unchecked Sendable`: `multi`, `active` and `idle` are touched only on the loop thread (after
/// `init`, which runs before the thread starts); shared state is in the `inbox` mutex.
final class CurlMultiLoop: @unchecked Sendable {
    struct Settings: Sendable {
        var requestTimeoutMilliseconds: Int
        var connectTimeoutMilliseconds: Int
        var trustedCA: [UInt8]?
        var identity: ClientIdentity?
    }

    enum Operation {
        case add(Transfer)
        case cancel(Transfer)
        /// Cancels every transfer of one bulk send (``Transfer/owner``), in flight or queued.
        case cancelOwned(ObjectIdentifier)
    }

    private struct Inbox {
        var operations: [Operation] = []
        var shutdown = false
        var started = false
        var connectionsOpened = 0
        /// The loop is (about to be) asleep in `curl_multi_poll`: a submit must wake it.
        var sleeping = false
        /// A wake-up was already sent since the loop went to sleep.
        var wakePending = false
    }

    private let settings: Settings
    private let inbox = Mutex(Inbox())
    /// Signalled when the loop thread has cleaned up and is about to exit.
    private let stopped = DispatchSemaphore(value: 0)
    private let multi: UnsafeMutableRawPointer?
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var idle: [UnsafeMutableRawPointer] = []
    /// `CURLOPT_ERRORBUFFER` of each easy handle, allocated with it.
    private var errorBuffers: [UnsafeMutableRawPointer: UnsafeMutablePointer<CChar>] = [:]
    /// Transfers beyond what the connections can carry wait here, in order, rather than in
    /// libcurl's own pending queue: a transfer libcurl has attached to a connection that then
    /// receives GOAWAY counts a retry, and libcurl gives up after five.
    private var waiting: [Transfer] = []
    private var waitingHead = 0
    let maximumInFlight: Int

    init(settings: Settings, maximumConnectionsPerHost: Int, maximumConcurrentStreams: Int) {
        self.settings = settings
        maximumInFlight = max(1, maximumConnectionsPerHost) * max(1, maximumConcurrentStreams)
        multi = curl_multi_init()
        if let multi {
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, maximumConnectionsPerHost))
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, maximumConcurrentStreams))
        }
    }

    var connectionsOpened: Int { inbox.withLock { $0.connectionsOpened } }

    /// Queues an operation and wakes the loop, starting its thread on first use.
    func submit(_ operation: Operation) {
        switch operation {
        case .add(let transfer): submit(batch: [transfer])
        case .cancel, .cancelOwned: post([operation], refused: [])
        }
    }

    /// Queues transfers with one lock and at most one wake-up.
    func submit(batch transfers: [Transfer]) {
        post(transfers.map(Operation.add), refused: transfers)
    }

    /// `refused` are the transfers among `operations`, failed at once if the loop has shut down.
    private func post(_ operations: [Operation], refused transfers: [Transfer]) {
        let (start, refused, wake) = inbox.withLock { state -> (Bool, Bool, Bool) in
            if state.shutdown { return (false, true, false) }
            state.operations.append(contentsOf: operations)
            // Only a sleeping loop needs the wake-up syscall; an awake one drains the inbox before
            // it sleeps again.
            let wake = state.sleeping && !state.wakePending
            if wake { state.wakePending = true }
            defer { state.started = true }
            return (!state.started, false, wake)
        }
        if refused {
            for transfer in transfers { transfer.resume(.failure(TransportError.shutDown)) }
            return
        }
        guard let multi else {
            for transfer in transfers { transfer.resume(.failure(TransportError(code: 2, message: "curl_multi_init failed"))) }
            return
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = CurlMultiLoop.threadName
            thread.start()
        } else if wake {
            curl_multi_wakeup(multi)
        }
    }

    /// Stops the loop: in-flight and queued requests fail with ``TransportError/shutDown``.
    ///
    /// Waits (up to five seconds) for the loop thread to release libcurl and OpenSSL state, so a
    /// process that exits right after releasing its connectors does not tear OpenSSL down under a
    /// thread still using it. Never waits when called on the loop thread itself.
    func shutdown() {
        let started = inbox.withLock { state -> Bool in
            state.shutdown = true
            return state.started
        }
        guard let multi else { return }
        guard started else {
            curl_multi_cleanup(multi)
            return
        }
        curl_multi_wakeup(multi)
        if Thread.current.name != CurlMultiLoop.threadName {
            _ = stopped.wait(timeout: .now() + 5)
        }
    }

    static let threadName = "swift-apns.curl"

    // MARK: Loop thread

    private func run() {
        guard let multi else { return }
        var running: Int32 = 0
        while true {
            let (operations, stop) = inbox.withLock { state -> ([Operation], Bool) in
                state.sleeping = false
                state.wakePending = false
                var taken: [Operation] = []
                swap(&taken, &state.operations)
                return (taken, state.shutdown)
            }
            for operation in operations {
                switch operation {
                case .add(let transfer): enqueue(transfer)
                case .cancel(let transfer): cancel(transfer, on: multi)
                case .cancelOwned(let owner): cancelAll(ownedBy: owner, on: multi)
                }
            }
            if stop {
                for operation in inbox.withLock({ $0.operations }) {
                    if case .add(let transfer) = operation { transfer.resume(.failure(TransportError.shutDown)) }
                }
                for transfer in waiting[waitingHead...] { transfer.resume(.failure(TransportError.shutDown)) }
                waiting.removeAll()
                for (easy, transfer) in active {
                    curl_multi_remove_handle(multi, easy)
                    curl_easy_cleanup(easy)
                    transfer.resume(.failure(TransportError.shutDown))
                }
                active.removeAll()
                idle.forEach { curl_easy_cleanup($0) }
                idle.removeAll()
                errorBuffers.values.forEach { $0.deallocate() }
                errorBuffers.removeAll()
                curl_multi_cleanup(multi)
                stopped.signal()
                return
            }
            startWaiting(on: multi)
            curl_multi_perform(multi, &running)
            collectFinished(on: multi)
            startWaiting(on: multi)
            let idle = inbox.withLock { state -> Bool in
                guard state.operations.isEmpty, !state.shutdown else { return false }
                state.sleeping = true
                return true
            }
            if idle { curl_multi_poll(multi, nil, 0, 1000, nil) }
        }
    }

    /// Moves waiting transfers into libcurl while there is room.
    private func startWaiting(on multi: UnsafeMutableRawPointer) {
        while active.count < maximumInFlight, waitingHead < waiting.count {
            let transfer = waiting[waitingHead]
            waitingHead += 1
            if !transfer.finished { start(transfer, on: multi) }
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 4096 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    private func start(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) {
        guard let easy = idle.popLast() ?? makeEasy() else {
            transfer.resume(.failure(TransportError(code: 2, message: "curl_easy_init failed")))
            return
        }
        configure(easy, for: transfer)
        let added = curl_multi_add_handle(multi, easy)
        guard added == CURLM_OK else {
            recycle(easy)
            transfer.resume(.failure(TransportError(code: Int(added.rawValue), message: String(cString: curl_multi_strerror(added)))))
            return
        }
        transfer.easy = easy
        active[easy] = transfer
    }

    /// A new easy handle with everything that is the same for every transfer set once: TLS,
    /// timeouts, HTTP/2, callbacks, its error buffer.
    private func makeEasy() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        errorBuffers[easy] = errorBuffer
        _ = ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        _ = ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, settings.requestTimeoutMilliseconds)
        _ = ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds)
        if let ca = settings.trustedCA {
            ca.withUnsafeBytes { _ = ccurl_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) }
        }
        if let identity = settings.identity {
            identity.certificateChainPEM.withUnsafeBytes {
                _ = ccurl_easy_setopt_blob(easy, CURLOPT_SSLCERT_BLOB, $0.baseAddress, $0.count)
            }
            identity.privateKeyPEM.withUnsafeBytes {
                _ = ccurl_easy_setopt_blob(easy, CURLOPT_SSLKEY_BLOB, $0.baseAddress, $0.count)
            }
            _ = ccurl_easy_setopt_string(easy, CURLOPT_SSLCERTTYPE, "PEM")
            _ = ccurl_easy_setopt_string(easy, CURLOPT_SSLKEYTYPE, "PEM")
        }
        _ = ccurl_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            let length = size * count
            guard let data, let context else { return length }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            transfer.responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
        _ = ccurl_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            let length = size * count
            guard let data, let context else { return length }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
        return easy
    }

    /// Sets what differs per transfer. Every such option is set each time, so nothing carries
    /// over from the handle's previous transfer.
    private func configure(_ easy: UnsafeMutableRawPointer, for transfer: Transfer) {
        errorBuffers[easy]?.pointee = 0
        _ = ccurl_easy_setopt_string(easy, CURLOPT_URL, transfer.url)
        switch transfer.method {
        case .post:
            _ = ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil)
            _ = ccurl_easy_setopt_long(easy, CURLOPT_POST, 1)
            _ = ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.body.count))
            _ = ccurl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, transfer.body.bytes.baseAddress)
        case .get:
            _ = ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil)
            _ = ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
        default:
            if transfer.body.count > 0 {
                _ = ccurl_easy_setopt_long(easy, CURLOPT_POST, 1)
                _ = ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.body.count))
                _ = ccurl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, transfer.body.bytes.baseAddress)
            } else {
                _ = ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
            }
            _ = ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, transfer.method.rawValue)
        }
        _ = ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, transfer.headerList.list)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
    }

    private func cancel(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) {
        guard !transfer.finished else { return }
        transfer.cancelled = true
        if let easy = transfer.easy, active.removeValue(forKey: easy) != nil {
            curl_multi_remove_handle(multi, easy)
            recycle(easy)
            transfer.easy = nil
            transfer.resume(.failure(CancellationError()))
        } else if transfer.queued {
            transfer.resume(.failure(CancellationError()))  // skipped when its turn comes
        }
        // Otherwise its `add` has not been processed yet; `enqueue` sees `cancelled`.
    }

    private func cancelAll(ownedBy owner: ObjectIdentifier, on multi: UnsafeMutableRawPointer) {
        for transfer in active.values where transfer.owner == owner { cancel(transfer, on: multi) }
        for transfer in waiting[waitingHead...] where transfer.owner == owner { cancel(transfer, on: multi) }
    }

    private func enqueue(_ transfer: Transfer) {
        if transfer.cancelled {
            transfer.resume(.failure(CancellationError()))
            return
        }
        transfer.queued = true
        waiting.append(transfer)
    }

    private func collectFinished(on multi: UnsafeMutableRawPointer) {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            finish(easy, code: message.pointee.data.result, on: multi)
        }
    }

    private func finish(_ easy: UnsafeMutableRawPointer, code: CURLcode, on multi: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, easy)
        guard let transfer = active.removeValue(forKey: easy) else {
            recycle(easy)
            return
        }
        var connects = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        if connects > 0 { inbox.withLock { $0.connectionsOpened += connects } }
        let result: Result<HTTPResponse, any Error>
        if code == CURLE_OK {
            var status = 0
            var version = 0
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            if version == Int(CURL_HTTP_VERSION_2_0) {
                result = .success(HTTPResponse(status: status, headers: transfer.responseHeaders, body: transfer.responseBody))
            } else {
                result = .failure(TransportError.notHTTP2)
            }
        } else if Transfer.isUnprocessed(code: code, message: errorMessage(of: easy)),
            ContinuousClock.now < transfer.deadline, transfer.resubmissions < Transfer.maximumResubmissions
        {
            // libcurl retried this request five times on connections that closed before the server
            // took it (GOAWAY, refused stream) and gave up; the server never processed it, so
            // sending it again cannot duplicate it. It goes on until its request timeout.
            transfer.resubmissions += 1
            recycle(easy)
            transfer.easy = nil
            transfer.prepareForResubmission()
            waiting.append(transfer)
            return
        } else {
            let detail = errorMessage(of: easy)
            result = .failure(TransportError(
                code: Int(code.rawValue), message: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail))
        }
        recycle(easy)
        transfer.easy = nil
        transfer.resume(result)
    }

    /// libcurl's detail for the last failure of `easy`.
    private func errorMessage(of easy: UnsafeMutableRawPointer) -> String {
        errorBuffers[easy].map { String(cString: $0) } ?? ""
    }

    /// Keeps a finished easy handle, still configured, for the next transfer.
    private func recycle(_ easy: UnsafeMutableRawPointer) {
        if idle.count < 4096 {
            idle.append(easy)
        } else {
            curl_easy_cleanup(easy)
            errorBuffers.removeValue(forKey: easy)?.deallocate()
        }
    }
}
