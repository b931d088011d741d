import APNsCore
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import X509

/// Per-connection state, used only on the connection's event loop.
final class ConnectionContext {
    let channel: Channel
    /// The verified client certificate's common name: nil until looked up, then `.some(nil)` for none.
    var clientCommonName: String??
    var acceptedStreams = 0
    var goAwayLastStreamID: HTTP2StreamID?
    var openStreams = 0

    init(channel: Channel) { self.channel = channel }

    func commonName() -> String? {
        if let cached = clientCommonName { return cached }
        var name: String?
        if let handler = try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let peer = handler.peerCertificate,
            let der = try? peer.toDERBytes(),
            let certificate = try? Certificate(derEncoded: der)
        {
            for relative in certificate.subject {
                for attribute in relative where attribute.type == .RDNAttributeType.commonName {
                    name = String(describing: attribute.value)
                }
            }
        }
        clientCommonName = .some(name)
        return name
    }

    /// After GOAWAY, the client closes the connection once its last stream is answered. Closing it
    /// here at once could drop responses NIO has not written yet, so the server only cleans up a
    /// second after the last stream, for clients that keep the connection open.
    func streamFinished() {
        openStreams -= 1
        guard goAwayLastStreamID != nil, openStreams <= 0 else { return }
        let channel = channel
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
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
        if let last = connection.goAwayLastStreamID, streamID > last {
            answered = true
            context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            return
        }
        counted = true
        connection.openStreams += 1
        connection.acceptedStreams += 1
        if let limit = state.configuration.goAwayAfterStreams, connection.acceptedStreams == limit {
            connection.goAwayLastStreamID = streamID
            let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: .noError, opaqueData: nil))
            connection.channel.writeAndFlush(frame, promise: nil)
        }
    }

    private func respond(context: ChannelHandlerContext) {
        guard !answered, let head else { return }
        answered = true
        var headers: [APNsRequest.Header] = []
        for (name, value, _) in head where !name.hasPrefix(":") { headers.append(.init(name: name, value: value)) }
        let incoming = RequestValidator.Incoming(
            method: head.first(name: ":method") ?? "", path: head.first(name: ":path") ?? "",
            headers: headers, body: body, clientCertificateName: connection.value.commonName())
        let verdict = RequestValidator(state: state).evaluate(incoming)

        var responseHeaders = HPACKHeaders([(":status", String(verdict.status))])
        for (name, value) in verdict.headers { responseHeaders.add(name: name, value: value) }
        var responseBody: ByteBuffer?
        if let reason = verdict.reason {
            var json = #"{"reason":""# + reason.rawValue + "\""
            if let timestamp = verdict.timestamp { json += #","timestamp":"# + String(timestamp) }
            json += "}"
            responseHeaders.add(name: "content-type", value: "application/json")
            responseBody = context.channel.allocator.buffer(string: json)
        } else if let body = verdict.body {
            responseHeaders.add(name: "content-type", value: "application/json")
            responseBody = context.channel.allocator.buffer(string: body)
        }
        context.write(wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: responseBody == nil))), promise: nil)
        if let responseBody {
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(responseBody), endStream: true))), promise: nil)
        }
        context.flush()

        state.record(RecordedRequest(
            method: incoming.method, path: incoming.path, authority: head.first(name: ":authority") ?? "",
            headers: headers, body: body, authentication: verdict.authentication, status: verdict.status,
            reason: verdict.reason?.rawValue, responseHeaders: verdict.headers.map { APNsRequest.Header(name: $0.0, value: $0.1) }))
        if counted { connection.value.streamFinished() }
    }
}
