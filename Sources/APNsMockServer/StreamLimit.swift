import NIOCore

/// The concurrent-stream limit as APNs keeps it: a client that opens one stream more than the limit
/// it was given gets that stream refused (RST_STREAM REFUSED_STREAM, never processed), and the
/// streams already open are answered (RFC 9113 section 5.1.2 lets a server treat it as a stream
/// error). SwiftNIO's HTTP/2 state machine instead ends the whole connection (GOAWAY
/// PROTOCOL_ERROR) for the same stream, so the mock tells NIO a limit it never reaches
/// (``enforcedByNIO(_:)``), ``SettingsRewriter`` writes the real one on the wire, and the
/// connection's stream handlers refuse what is over it once the client has acknowledged it
/// (`ConnectionContext.streamLimit`; protocol reference, Hosts and connections).
enum StreamLimit {
    /// Added to the limit NIO is given; the client sees the limit without it.
    static let offset: UInt32 = 1 << 20

    /// The value for NIO's own SETTINGS that advertises `limit` on the wire.
    static func enforcedByNIO(_ limit: Int) -> Int { Int(offset) + limit }
}

/// Rewrites SETTINGS_MAX_CONCURRENT_STREAMS in the SETTINGS frames NIO writes, from the value NIO
/// enforces to the one the client must see (``StreamLimit``). It reads the outgoing bytes between
/// NIO's HTTP/2 handler and TLS as frames (a 9-byte header, then the payload), following their
/// boundaries across writes; NIO writes a SETTINGS frame whole, in one buffer.
///
/// Thread safety: a channel handler, used only on its channel's event loop.
final class SettingsRewriter: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// Bytes of the current frame's payload still to pass, and the header bytes seen of the next.
    private var payloadLeft = 0
    private var header: [UInt8] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = unwrapOutboundIn(data) else {
            // A file region is a DATA payload; NIO's HTTP/2 handler writes none.
            context.write(data, promise: promise)
            return
        }
        var index = buffer.readerIndex
        let end = buffer.writerIndex
        while index < end {
            if payloadLeft > 0 {
                let skip = min(payloadLeft, end - index)
                payloadLeft -= skip
                index += skip
                continue
            }
            header.append(buffer.getInteger(at: index, as: UInt8.self) ?? 0)
            index += 1
            guard header.count == 9 else { continue }
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            let isSettings = header[3] == 0x4 && header[4] & 0x1 == 0
            header.removeAll(keepingCapacity: true)
            if isSettings && end - index >= length { rewriteSettings(in: &buffer, at: index, length: length) }
            payloadLeft = length
        }
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }

    private func rewriteSettings(in buffer: inout ByteBuffer, at start: Int, length: Int) {
        var entry = start
        while entry + 6 <= start + length {
            if buffer.getInteger(at: entry, as: UInt16.self) == 0x3,
                let value = buffer.getInteger(at: entry + 2, as: UInt32.self), value >= StreamLimit.offset
            {
                buffer.setInteger(value - StreamLimit.offset, at: entry + 2)
            }
            entry += 6
        }
    }
}
