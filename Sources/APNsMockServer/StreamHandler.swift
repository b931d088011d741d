import APNs
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import NIOTLS

/// Per-connection state, used only on the connection's event loop.
final class ConnectionContext {
    let channel: Channel
    /// How this connection misbehaves, if at all (fixed when it opens).
    let fault: MockAPNsServer.Fault?
    /// Requests processed and deliberately left unanswered.
    var processedUnanswered = 0
    /// Requests seen on the connection while it has the `neverAnswerAfter` fault.
    var requestsBeforeSilence = 0
    /// When the last request arrived (or the connection opened), and whether the connection went
    /// silent for good (`silentAfterIdle`).
    var lastRequest = NIODeadline.now()
    var silenced = false
    /// The stream limit was raised after the one-stream start (`oneStreamUntilValidToken`).
    var streamLimitRaised = false
    /// The concurrent-stream limit in effect; a stream over it is refused (``StreamLimit``). A
    /// limit takes effect when the client acknowledges the SETTINGS that carried it (RFC 9113
    /// section 6.5.3): until then, none, as for a client that has not read it yet.
    var streamLimit = Int.max
    /// Limits sent in SETTINGS the client has not acknowledged yet, oldest first.
    var unacknowledgedStreamLimits: [Int]
    /// The key id of the first push on the connection whose token verified: APNs ties the
    /// connection to it and refuses tokens of any other key (UnrelatedKeyIdInToken).
    var keyID: String?
    /// The verified client certificate: nil until looked up, then `.some(nil)` for none.
    var clientCertificateCache: RequestValidator.ClientCertificate??
    var acceptedStreams = 0
    /// Error answers so far (400–499 but 410), and of them BadDeviceToken (``MockAPNsServer/ErrorLimit``).
    var errors = 0
    var badDeviceTokens = 0
    /// The server ended the connection for its errors: it closes it sooner once its streams are
    /// done (``streamFinished()``).
    var endedForErrors = false
    var goAwayLastStreamID: HTTP2StreamID?
    var openStreams = 0
    /// The peer's address as `ip:port`, made once per connection for the requests it records.
    let remoteAddress: String?

    init(channel: Channel, fault: MockAPNsServer.Fault?, streamLimit: Int) {
        self.channel = channel
        self.fault = fault
        unacknowledgedStreamLimits = [streamLimit]
        if fault == .tiedToAnotherKey { keyID = ConnectionContext.anotherKey }
        remoteAddress = channel.remoteAddress.flatMap { address in
            address.ipAddress.flatMap { ip in address.port.map { "\(ip):\($0)" } }
        }
    }

    /// The key a `tiedToAnotherKey` connection is tied to: no key id has this form.
    static let anotherKey = "(another key)"

    /// The client acknowledged the oldest SETTINGS frame it had not: its stream limit is in effect.
    func settingsAcknowledged() {
        guard !unacknowledgedStreamLimits.isEmpty else { return }
        streamLimit = unacknowledgedStreamLimits.removeFirst()
    }

    /// Asks the client to move to a new connection: GOAWAY with NO_ERROR and the highest stream id,
    /// so every stream already open is still answered.
    func goAwayGracefully() {
        guard goAwayLastStreamID == nil else { return }
        goAwayLastStreamID = .maxID
        let frame = HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
        channel.writeAndFlush(frame, promise: nil)
        if openStreams <= 0 {
            let channel = channel
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
    }

    /// Ends the connection abruptly. With `reset`, as a crashed peer or a middlebox does: the TCP
    /// RST alone (SO_LINGER 0), closed below TLS so no close_notify goes before it.
    func drop(reset: Bool) {
        let channel = channel
        if reset, let socket = channel as? any SocketOptionProvider {
            socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
                // An outbound event from the TLS handler's context starts below that handler.
                if let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
                    tls.close(promise: nil)
                } else {
                    channel.close(promise: nil)
                }
            }
        } else {
            channel.close(promise: nil)
        }
    }

    /// The verified client certificate's common name and, when it carries them, Apple's topic list
    /// and environment extensions (`PushCertificate`, in `APNs`); read once per connection.
    func clientCertificate() -> RequestValidator.ClientCertificate? {
        if let cached = clientCertificateCache { return cached }
        var found: RequestValidator.ClientCertificate?
        if let handler = try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let peer = handler.peerCertificate,
            let der = try? peer.toDERBytes(),
            let certificate = LibCrypto.clientCertificate(
                der: der, topicsOID: PushCertificate.topicsOID,
                markerOIDs: [PushCertificate.sandboxOID, PushCertificate.productionOID]),
            let name = certificate.commonName
        {
            var environments: Set<PushCertificate.Environment> = []
            if certificate.markers.contains(PushCertificate.sandboxOID) { environments.insert(.sandbox) }
            if certificate.markers.contains(PushCertificate.productionOID) { environments.insert(.production) }
            found = RequestValidator.ClientCertificate(
                commonName: name,
                topics: certificate.topicsExtension.flatMap { try? PushCertificate.topics(fromExtensionValue: $0) },
                environments: environments)
        }
        clientCertificateCache = .some(found)
        return found
    }

    /// Ends the one-stream start (``MockAPNsServer/Configuration/oneStreamUntilValidToken``): a
    /// SETTINGS frame raises the limit to `limit`, in effect once the client acknowledges it.
    func raiseStreamLimit(to limit: Int) {
        guard !streamLimitRaised else { return }
        streamLimitRaised = true
        unacknowledgedStreamLimits.append(limit)
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(
                .settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: StreamLimit.enforcedByNIO(limit))])))
        channel.writeAndFlush(settings, promise: nil)
    }

    /// After GOAWAY, the client closes the connection once its last stream is answered. Closing it
    /// here at once could drop responses NIO has not written yet, so the server only cleans up a
    /// second after the last stream, for clients that keep the connection open; a tenth of one
    /// after an end for errors, as APNs disconnects (a client waiting for the connection to go,
    /// before it opens the next, waits that long).
    func streamFinished() {
        openStreams -= 1
        guard goAwayLastStreamID != nil, openStreams <= 0 else { return }
        let channel = channel
        channel.eventLoop.scheduleTask(in: endedForErrors ? .milliseconds(100) : .seconds(1)) {
            channel.close(promise: nil)
        }
    }
}

/// Handles one HTTP/2 stream: collects the request, asks ``RequestValidator`` and answers.
final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let state: ServerState
    private let connection: NIOLoopBound<ConnectionContext>
    private var head: HPACKHeaders?
    private var body: [UInt8] = []
    private var counted = false
    private var answered = false
    private var streamID = HTTP2StreamID.rootStream

    init(state: ServerState, connection: NIOLoopBound<ConnectionContext>) {
        self.state = state
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if head == nil {
                head = frame.headers
                begin(context: context)
            }
            if frame.endStream { respond(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { body.append(contentsOf: buffer.readableBytesView) }
            if frame.endStream { respond(context: context) }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted && !answered {
            answered = true
            connection.value.streamFinished()
        }
        context.fireChannelInactive()
    }

    /// Counts the stream against the connection, sending GOAWAY when the configured count is reached
    /// and refusing streams that arrive after it.
    private func begin(context: ChannelHandlerContext) {
        let connection = connection.value
        let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
        self.streamID = streamID
        if let last = connection.goAwayLastStreamID, streamID > last {
            answered = true
            context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            return
        }
        if connection.openStreams >= connection.streamLimit {
            // One stream over the limit the client was given: refused, never processed; the
            // others go on (``StreamLimit``).
            answered = true
            context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            return
        }
        counted = true
        connection.openStreams += 1
        connection.acceptedStreams += 1
        if let limit = state.configuration.goAwayAfterStreams, connection.acceptedStreams == limit {
            connection.goAwayLastStreamID = streamID
            let frame = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: .noError, opaqueData: nil))
            connection.channel.writeAndFlush(frame, promise: nil)
        }
        if case .goAway(let after, let code, let debugData, let lowerBy)? = connection.fault,
            connection.goAwayLastStreamID == nil,
            connection.acceptedStreams == after, state.takeFaultyRequest()
        {
            // Client streams are odd: `lowerBy` streams below is 2 × lowerBy in ids.
            let last = HTTP2StreamID(max(0, Int(Int32(streamID)) - 2 * lowerBy))
            connection.goAwayLastStreamID = last
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(
                    lastStreamID: last, errorCode: HTTP2ErrorCode(networkCode: Int(code)),
                    opaqueData: context.channel.allocator.buffer(string: debugData)))
            connection.channel.writeAndFlush(frame, promise: nil)
        }
    }

    /// Counts an error answer against the connection and ends it, after this answer, once it has
    /// answered too many (``MockAPNsServer/ErrorLimit``).
    private func countError(_ verdict: RequestValidator.Verdict) {
        guard let limit = state.configuration.errorLimit, (400..<500).contains(verdict.status), verdict.status != 410
        else { return }
        let connection = connection.value
        connection.errors += 1
        if verdict.reason == .badDeviceToken { connection.badDeviceTokens += 1 }
        guard connection.goAwayLastStreamID == nil,
            connection.errors >= limit.errors || connection.badDeviceTokens >= limit.badDeviceTokens
        else { return }
        // Our decision: GOAWAY names this stream as the last processed; a stream after it is
        // refused, never processed, as after APNs' own GOAWAY, and the client sends it again.
        connection.goAwayLastStreamID = streamID
        connection.endedForErrors = true
        state.connectionEndedForErrors()
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(
                lastStreamID: streamID, errorCode: .noError,
                opaqueData: connection.channel.allocator.buffer(string: "too many errors on this connection")))
        connection.channel.writeAndFlush(frame, promise: nil)
    }

    /// Misbehaves as the connection's fault says; returns true when the request is dealt with.
    private func applyFault(context: ChannelHandlerContext, apnsID: String?) -> Bool {
        let connection = connection.value
        if let last = connection.goAwayLastStreamID, streamID > last {
            // Above the GOAWAY's last-stream-id: refused, never processed. The client knows. (No
            // RST_STREAM is written here: this runs inside NIO's own closing of streams, where a
            // write re-enters the stream channel's pending writes.)
            if counted { connection.streamFinished() }
            recordFaulted("GOAWAY: above its last-stream-id, refused unprocessed")
            return true
        }
        guard let fault = connection.fault else { return false }
        switch fault {
        case .goAway, .tiedToAnotherKey: return false  // dealt with where the stream or the key is judged
        default: break
        }
        // A connection that never answers stays that way (as a dead peer or middlebox does), even
        // after the server is healed for new connections.
        switch fault {
        case .neverAnswer: break
        case .neverAnswerAfter(let answered):
            connection.requestsBeforeSilence += 1
            if connection.requestsBeforeSilence <= answered { return false }
        case .silentAfterIdle(let idle):
            let now = NIODeadline.now()
            if now - connection.lastRequest > .nanoseconds(idle.nanoseconds) { connection.silenced = true }
            connection.lastRequest = now
            if !connection.silenced { return false }
        default: guard state.takeFaultyRequest() else { return false }
        }
        if case .delay = fault {
            // Answered later, and recorded then, as the server judges it.
        } else if case .respond(let status, _, let body) = fault {
            // The answer's apns-id, as written below.
            let id = apnsID.flatMap { RequestValidator.isCanonicalUUID($0) ? $0 : nil } ?? APNsID().description
            recordFaulted(
                fault.description, status: status,
                reason: APNsRejection(status: status, body: Array(body.utf8)).reason?.rawValue,
                responseHeaders: [.init(name: "apns-id", value: id)])
            return respond(context: context, status: status, fault: fault, apnsID: id)
        } else {
            recordFaulted(fault.description)
        }
        switch fault {
        case .resetAfterProcessing(let limit), .closeAfterProcessing(let limit):
            state.markProcessed(apnsID: apnsID)
            connection.processedUnanswered += 1
            if connection.processedUnanswered == limit {
                if case .resetAfterProcessing = fault {
                    connection.drop(reset: true)
                } else {
                    connection.drop(reset: false)
                }
            }
        case .neverAnswer, .neverAnswerAfter, .silentAfterIdle:
            state.markProcessed(apnsID: apnsID)
        case .delay(let delay):
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let context = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.value.eventLoop.scheduleTask(in: .nanoseconds(delay.nanoseconds)) {
                handler.value.answer(context: context.value)
            }
        case .resetStreams(let code):
            context.writeAndFlush(wrapOutboundOut(.rstStream(HTTP2ErrorCode(networkCode: Int(code)))), promise: nil)
            if counted { connection.streamFinished() }
        case .resetStreamsAfterProcessing(let code):
            state.markProcessed(apnsID: apnsID)
            context.writeAndFlush(wrapOutboundOut(.rstStream(HTTP2ErrorCode(networkCode: Int(code)))), promise: nil)
            if counted { connection.streamFinished() }
        case .respond:
            break  // answered above
        case .goAway, .stallHandshake, .tiedToAnotherKey:
            return false
        }
        return true
    }

    /// Answers with the `respond` fault's status, `Retry-After` and body, and the apns-id `id`:
    /// every answer carries one, as APNs' own (protocol reference, Responses).
    private func respond(
        context: ChannelHandlerContext, status: Int, fault: MockAPNsServer.Fault, apnsID id: String
    ) -> Bool {
        guard case .respond(_, let retryAfter, let body) = fault else { return false }
        var headers = HPACKHeaders([(":status", String(status))])
        if let retryAfter { headers.add(name: "retry-after", value: String(retryAfter)) }
        headers.add(name: "apns-id", value: id)
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: body.isEmpty))), promise: nil)
        if !body.isEmpty {
            let buffer = context.channel.allocator.buffer(string: body)
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        }
        context.flush()
        if counted { connection.value.streamFinished() }
        return true
    }

    /// The request's regular (non-pseudo) headers, in the order received.
    private var requestHeaders: [APNsRequest.Header] {
        var headers: [APNsRequest.Header] = []
        for (name, value, _) in head ?? [:] where !name.hasPrefix(":") {
            headers.append(.init(name: name, value: value))
        }
        return headers
    }

    /// Records a request that `fault` dealt with instead of the server's judgment: listed by the
    /// console (``MockAPNsServer/receivedRequests``), not in ``MockAPNsServer/requests``.
    private func recordFaulted(
        _ fault: String, status: Int = 0, reason: String? = nil, responseHeaders: [APNsRequest.Header] = []
    ) {
        guard let head else { return }
        state.record(
            RecordedRequest(
                method: head.first(name: ":method") ?? "", path: head.first(name: ":path") ?? "",
                authority: head.first(name: ":authority") ?? "", headers: requestHeaders, body: body,
                authentication: .none, status: status, reason: reason, responseHeaders: responseHeaders,
                remoteAddress: connection.value.remoteAddress, receivedAt: state.configuration.clock(), fault: fault))
    }

    private func respond(context: ChannelHandlerContext) {
        guard !answered, let head else { return }
        answered = true
        state.arrived()
        if applyFault(context: context, apnsID: head.first(name: "apns-id")) { return }
        answer(context: context)
    }

    /// Validates the request and answers as APNs would.
    private func answer(context: ChannelHandlerContext) {
        guard let head else { return }
        let headers = requestHeaders
        let incoming = RequestValidator.Incoming(
            method: head.first(name: ":method") ?? "", path: head.first(name: ":path") ?? "",
            headers: headers, body: body, clientCertificate: connection.value.clientCertificate(),
            connectionKeyID: connection.value.keyID)
        let verdict = RequestValidator(state: state).evaluate(incoming)
        if connection.value.keyID == nil, case .token(_, let keyID, _) = verdict.authentication {
            connection.value.keyID = keyID
        }

        var responseHeaders = HPACKHeaders([(":status", String(verdict.status))])
        for (name, value) in verdict.headers { responseHeaders.add(name: name, value: value) }
        var responseBody: ByteBuffer?
        if let reason = verdict.reason {
            let json = APNsRejection.body(reason: reason, timestampMilliseconds: verdict.timestamp)
            responseHeaders.add(name: "content-type", value: "application/json")
            responseBody = context.channel.allocator.buffer(string: json)
        } else if let body = verdict.body {
            responseHeaders.add(name: "content-type", value: "application/json")
            responseBody = context.channel.allocator.buffer(string: body)
        }
        // Counted and recorded before it is answered: a client that has read the answer finds the
        // request in ``MockAPNsServer/processedCount(apnsID:)`` and ``MockAPNsServer/requests``
        // (done after the flush, a test reading them right after its last answer could miss it).
        if verdict.status == 200 {
            state.markProcessed(apnsID: verdict.headers.first(where: { $0.0 == "apns-id" })?.1)
        }
        state.record(
            RecordedRequest(
                method: incoming.method, path: incoming.path, authority: head.first(name: ":authority") ?? "",
                headers: headers, body: body, authentication: verdict.authentication, status: verdict.status,
                reason: verdict.reason?.rawValue,
                responseHeaders: verdict.headers.map { APNsRequest.Header(name: $0.0, value: $0.1) },
                remoteAddress: connection.value.remoteAddress, receivedAt: state.configuration.clock(), fault: nil))
        context.write(
            wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: responseBody == nil))), promise: nil)
        if let responseBody {
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(responseBody), endStream: true))), promise: nil)
        }
        context.flush()
        countError(verdict)

        // A token that verified ends the one-stream start, whatever the answer to its request.
        if state.configuration.oneStreamUntilValidToken, case .token = verdict.authentication {
            connection.value.raiseStreamLimit(to: state.configuration.maximumConcurrentStreams)
        }
        if counted { connection.value.streamFinished() }
    }
}

/// Counts HTTP/2 PING frames (not their acknowledgements) on a connection (NIO answers them),
/// and tells the connection when the client acknowledges a SETTINGS frame (``StreamLimit``).
final class PingCounter: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    private let state: ServerState
    private let connection: NIOLoopBound<ConnectionContext>

    init(state: ServerState, connection: NIOLoopBound<ConnectionContext>) {
        self.state = state
        self.connection = connection
    }

    /// A connection that presented a client certificate has no one-stream start: its limit is
    /// raised as soon as the handshake shows the certificate.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent, state.configuration.oneStreamUntilValidToken,
            connection.value.clientCertificate() != nil
        {
            connection.value.raiseStreamLimit(to: state.configuration.maximumConcurrentStreams)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data).payload {
        case .ping(_, ack: false): state.pingReceived()
        case .settings(.ack):
            connection.value.settingsAcknowledged()
            state.settingsAcknowledged()
        default: break
        }
        context.fireChannelRead(data)
    }
}
