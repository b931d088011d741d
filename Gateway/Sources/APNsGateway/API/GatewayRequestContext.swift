import Hummingbird
import NIOCore

/// The request context of the gateway's API: Hummingbird's basic one and the caller's address
/// (the connection's peer), by which look-ups of unknown API keys are limited, so that one
/// caller's guesses never turn away another caller's keys. Behind a proxy every caller has the
/// proxy's address: `X-Forwarded-For` is not read, since any caller could write it.
///
/// Thread safety: a value; `Sendable`.
public struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The caller's address; nil when the request did not come over a socket (a router test).
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The caller's IP address, as the unknown-key limit counts callers ("" for none).
    var caller: String { remoteAddress?.ipAddress ?? "" }
}
