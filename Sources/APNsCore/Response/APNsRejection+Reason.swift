extension APNsRejection {
    /// Apple's reason string (APNs reference §9). An open set: every reason Apple documents is a
    /// static member, and a reason APNs adds later still decodes, with its raw string kept.
    ///
    /// ```swift
    /// switch rejection.reason {
    /// case .badDeviceToken, .unregistered: forget(device)
    /// case .tooManyRequests: retryLater()
    /// default: log(rejection.reason.rawValue)
    /// }
    /// ```
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The HTTP status Apple sends with this reason; 400 for reasons it does not document.
        public var defaultStatus: Int {
            Reason.statusByReason.first(where: { $0.0 == self })?.1 ?? 400
        }

        /// Whether Apple documents this reason.
        public var isKnown: Bool { Reason.allKnown.contains(self) }

        /// What a caller should do about it (APNs reference §9).
        public var retry: RetryAdvice {
            switch self {
            case .tooManyRequests, .tooManyProviderTokenUpdates: return .later
            case .expiredProviderToken: return .afterRefreshingToken
            case .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout: return .withBackoff
            default: return .never
            }
        }

        /// One sentence on what to do, for error messages.
        public var advice: String {
            switch self {
            case .unregistered, .expiredToken:
                return "Stop sending to this token unless the device registered it again after the timestamp."
            case .badDeviceToken:
                return "Check that the connector's environment matches the app build that produced the token (sandbox for development builds, production for App Store and TestFlight) before forgetting the token: a whole batch of these means the environment is wrong."
            case .deviceTokenNotForTopic:
                return "Check the bundle id: the token belongs to another app (or the topic suffix is wrong). A whole batch of these means a configuration mistake, not dead tokens."
            case .badCertificateEnvironment, .badEnvironmentKeyIdInToken:
                return "The credential is for the other environment: use .sandbox for development builds and .production for App Store and TestFlight builds."
            case .expiredProviderToken:
                return "The JWT is older than an hour: check the server's clock."
            case .invalidProviderToken, .unrelatedKeyIdInToken, .missingProviderToken:
                return "Check the key id, team id and .p8 key of the token connector."
            case .tooManyProviderTokenUpdates:
                return "Share one token connector per key instead of creating one per request, then retry after a while: APNs accepts a new token at most every 20 minutes."
            case .tooManyRequests:
                return "Slow down: too many pushes to this device; retry later."
            case .payloadTooLarge:
                return "Shorten the payload."
            case .topicDisallowed, .badTopic, .missingTopic, .topicMismatch:
                return "Check the bundle id: it must belong to the team (token) or the certificate."
            case .internalServerError, .serviceUnavailable, .shutdown:
                return "Retry with back-off."
            default:
                return "See Apple's documentation for this reason."
            }
        }

        /// What to do after a rejection.
        public enum RetryAdvice: Hashable, Sendable {
            /// Retrying the same request cannot succeed.
            case never
            /// Retry after a while (rate limit).
            case later
            /// Mint a new provider token and retry once.
            case afterRefreshingToken
            /// A server-side problem: retry with exponential back-off.
            case withBackoff
        }

        // 400
        public static let badCollapseId = Reason(rawValue: "BadCollapseId")
        public static let badDeviceToken = Reason(rawValue: "BadDeviceToken")
        public static let badExpirationDate = Reason(rawValue: "BadExpirationDate")
        public static let badMessageId = Reason(rawValue: "BadMessageId")
        public static let badPriority = Reason(rawValue: "BadPriority")
        public static let badTopic = Reason(rawValue: "BadTopic")
        public static let deviceTokenNotForTopic = Reason(rawValue: "DeviceTokenNotForTopic")
        public static let duplicateHeaders = Reason(rawValue: "DuplicateHeaders")
        public static let idleTimeout = Reason(rawValue: "IdleTimeout")
        public static let invalidPushType = Reason(rawValue: "InvalidPushType")
        public static let missingDeviceToken = Reason(rawValue: "MissingDeviceToken")
        public static let missingTopic = Reason(rawValue: "MissingTopic")
        public static let payloadEmpty = Reason(rawValue: "PayloadEmpty")
        public static let topicDisallowed = Reason(rawValue: "TopicDisallowed")
        // 403
        public static let badCertificate = Reason(rawValue: "BadCertificate")
        public static let badCertificateEnvironment = Reason(rawValue: "BadCertificateEnvironment")
        public static let expiredProviderToken = Reason(rawValue: "ExpiredProviderToken")
        public static let forbidden = Reason(rawValue: "Forbidden")
        public static let invalidProviderToken = Reason(rawValue: "InvalidProviderToken")
        public static let missingProviderToken = Reason(rawValue: "MissingProviderToken")
        public static let unrelatedKeyIdInToken = Reason(rawValue: "UnrelatedKeyIdInToken")
        public static let badEnvironmentKeyIdInToken = Reason(rawValue: "BadEnvironmentKeyIdInToken")
        // 404, 405
        public static let badPath = Reason(rawValue: "BadPath")
        public static let methodNotAllowed = Reason(rawValue: "MethodNotAllowed")
        // 410
        public static let expiredToken = Reason(rawValue: "ExpiredToken")
        public static let unregistered = Reason(rawValue: "Unregistered")
        // 413
        public static let payloadTooLarge = Reason(rawValue: "PayloadTooLarge")
        // 429
        public static let tooManyProviderTokenUpdates = Reason(rawValue: "TooManyProviderTokenUpdates")
        public static let tooManyRequests = Reason(rawValue: "TooManyRequests")
        // 500, 503
        public static let internalServerError = Reason(rawValue: "InternalServerError")
        public static let serviceUnavailable = Reason(rawValue: "ServiceUnavailable")
        public static let shutdown = Reason(rawValue: "Shutdown")
        // Broadcast and channel management
        public static let featureNotEnabled = Reason(rawValue: "FeatureNotEnabled")
        public static let missingChannelId = Reason(rawValue: "MissingChannelId")
        public static let badChannelId = Reason(rawValue: "BadChannelId")
        public static let channelNotRegistered = Reason(rawValue: "ChannelNotRegistered")
        public static let badRequestParams = Reason(rawValue: "BadRequestParams")
        public static let badRequestPayload = Reason(rawValue: "BadRequestPayload")
        public static let missingPushType = Reason(rawValue: "MissingPushType")
        public static let cannotCreateChannelConfig = Reason(rawValue: "CannotCreateChannelConfig")
        public static let topicMismatch = Reason(rawValue: "TopicMismatch")

        /// Every reason of APNs reference §9 with its HTTP status.
        public static let allKnown: [Reason] = statusByReason.map(\.0)

        /// The status Apple sends with each documented reason.
        public static let statusByReason: [(Reason, Int)] = [
            (.badCollapseId, 400), (.badDeviceToken, 400), (.badExpirationDate, 400), (.badMessageId, 400),
            (.badPriority, 400), (.badTopic, 400), (.deviceTokenNotForTopic, 400), (.duplicateHeaders, 400),
            (.idleTimeout, 400), (.invalidPushType, 400), (.missingDeviceToken, 400), (.missingTopic, 400),
            (.payloadEmpty, 400), (.topicDisallowed, 400),
            (.badCertificate, 403), (.badCertificateEnvironment, 403), (.expiredProviderToken, 403),
            (.forbidden, 403), (.invalidProviderToken, 403), (.missingProviderToken, 403),
            (.unrelatedKeyIdInToken, 403), (.badEnvironmentKeyIdInToken, 403),
            (.badPath, 404), (.methodNotAllowed, 405), (.expiredToken, 410), (.unregistered, 410),
            (.payloadTooLarge, 413), (.tooManyProviderTokenUpdates, 429), (.tooManyRequests, 429),
            (.internalServerError, 500), (.serviceUnavailable, 503), (.shutdown, 503),
            (.featureNotEnabled, 400), (.missingChannelId, 400), (.badChannelId, 400),
            (.channelNotRegistered, 400), (.badRequestParams, 400), (.badRequestPayload, 400),
            (.missingPushType, 400), (.cannotCreateChannelConfig, 400), (.topicMismatch, 403),
        ]
    }
}
