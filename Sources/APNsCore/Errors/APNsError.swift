/// Everything a send, a bulk send or a connector can fail with, in one type to catch.
///
/// Each case carries the layer's own error, whose `description` says what went wrong and what to
/// do. ``mayHaveBeenDelivered`` and ``retryAdvice`` answer the two questions a caller has before
/// trying again.
///
/// ```swift
/// do {
///     try await send(notification, via: connector, to: device)
/// } catch .rejected(let rejection) where rejection.reason == .unregistered {
///     forget(device, unlessRegisteredAfter: rejection.timestamp)
/// } catch .transport(let failure) where failure.delivery == .notSent {
///     queueForLater(notification)        // it never left: no duplicate possible
/// } catch {
///     log(error.description)             // `error` is an APNsError
/// }
/// ```
public enum APNsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The notification, target or an option breaks a rule APNs enforces; nothing was sent.
    case validation(APNsValidationError)
    /// A key, certificate or passphrase cannot be used; nothing was sent.
    case credential(CredentialError)
    /// APNs answered and refused the notification; it will not be delivered.
    case rejected(APNsRejection)
    /// No answer came back; ``TransportError/delivery`` says whether the notification may have
    /// been delivered.
    case transport(TransportError)
    /// A bulk send's results were iterated a second time. Each bulk send sends once, when its
    /// results are first iterated; call `send(_:via:to:)` again to send again.
    case bulkResultsAlreadyIterated

    /// True only when the notification may have reached APNs although the send failed: a
    /// transport failure after the request was written. Validation, credential and rejection
    /// failures, and transport failures before any byte left, are false.
    public var mayHaveBeenDelivered: Bool {
        if case .transport(let failure) = self { return failure.delivery == .unknown }
        return false
    }

    /// What a caller may do about this failure.
    public var retryAdvice: RetryAdvice {
        switch self {
        case .validation, .credential, .bulkResultsAlreadyIterated:
            return .never
        case .rejected(let rejection):
            switch rejection.retry {
            case .never: return .never
            case .later: return .afterDelay(rejection.retryAfter)
            case .afterRefreshingToken: return .afterRefreshingToken
            case .onNewConnection: return .onNewConnection
            case .withBackoff: return .withBackoff(retryAfter: rejection.retryAfter)
            }
        case .transport(let failure):
            switch failure.kind {
            case .shutDown, .cancelled: return .never
            default: return failure.delivery == .notSent ? .safe : .mayDuplicate
            }
        }
    }

    /// What a caller may do after a failed send.
    public enum RetryAdvice: Hashable, Sendable {
        /// Sending the same notification again cannot succeed (or the caller gave up on it).
        case never
        /// It was never delivered: sending again is safe and cannot duplicate it.
        case safe
        /// It may have been delivered: sending again may show it twice.
        case mayDuplicate
        /// Rate-limited: try again after the delay (APNs' `Retry-After` when it sent one).
        case afterDelay(Duration?)
        /// The connector mints a new provider token and retries once on its own.
        case afterRefreshingToken
        /// APNs tied the connection to another key; the token connector closes it and sends once
        /// more on a new one on its own. Reaching the caller, it means APNs refused the new
        /// connection too: check that nothing else sends with another key through this connector.
        case onNewConnection
        /// A server-side problem: retry with exponential back-off, no sooner than `retryAfter`.
        case withBackoff(retryAfter: Duration?)
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        switch self {
        case .validation(let error): return error.description
        case .credential(let error): return error.description
        case .rejected(let error): return error.description
        case .transport(let error): return error.description
        case .bulkResultsAlreadyIterated:
            return
                "These bulk-send results were already iterated; iterating them again sends nothing. Call send(_:via:to:) again to send again."
        }
    }

    /// Wraps whatever a connector or a layer threw; anything that is not one of swift-apns' errors
    /// becomes a transport failure whose delivery is unknown, since nothing says it was not sent.
    init(wrapping error: any Error) {
        switch error {
        case let error as APNsError: self = error
        case let error as APNsValidationError: self = .validation(error)
        case let error as CredentialError: self = .credential(error)
        case let error as APNsRejection: self = .rejected(error)
        case let error as TransportError: self = .transport(error)
        case is CancellationError: self = .transport(.cancelled(delivery: .unknown))
        default:
            self = .transport(TransportError(kind: .other, delivery: .unknown, message: String(describing: error)))
        }
    }
}
