extension APNsRejection {
    /// Apple's reason string (<doc:ProtocolReference#Responses>). An open set: every reason Apple documents is a
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
        /// The value as APNs writes it.
        public let rawValue: String
        /// A reason from its string; any string, so reasons APNs adds later still decode.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A readable form for logs and test failures; it never contains a secret.
        public var description: String { rawValue }

        /// The HTTP status Apple sends with this reason; 400 for reasons it does not document.
        public var defaultStatus: Int {
            Reason.statusByReason.first(where: { $0.0 == self })?.1 ?? 400
        }

        /// Whether Apple documents this reason.
        public var isKnown: Bool { Reason.allKnown.contains(self) }

        /// What a caller should do about it (<doc:ProtocolReference#Responses>).
        public var retry: RetryAdvice {
            switch self {
            case .tooManyRequests, .tooManyProviderTokenUpdates: return .later
            case .expiredProviderToken: return .afterRefreshingToken
            case .unrelatedKeyIdInToken: return .onNewConnection
            case .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout: return .withBackoff
            default: return .never
            }
        }

        /// Whether APNs refused the credential itself (the key, its team or environment, or the
        /// certificate), not this one notification: every send with it will be refused the same
        /// way until it is fixed. The circuit breaker counts these against the connection's path.
        /// ExpiredProviderToken is not one (the token connector mints a new token and retries), nor
        /// is UnrelatedKeyIdInToken, which refuses one connection, not the key (it retries on a new
        /// one).
        public var refusesTheCredential: Bool {
            switch self {
            case .invalidProviderToken, .missingProviderToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken,
                .badCertificate, .badCertificateEnvironment, .forbidden:
                return true
            default:
                return false
            }
        }

        /// One sentence on what to do, for error messages.
        public var advice: String {
            switch self {
            case .unregistered, .expiredToken:
                return "Stop sending to this token unless the device registered it again after the timestamp."
            case .badDeviceToken:
                return
                    "Check that the connector's environment matches the app build that produced the token (sandbox for development builds, production for App Store and TestFlight) before forgetting the token: a whole batch of these means the environment is wrong."
            case .deviceTokenNotForTopic:
                return
                    "Check the bundle id: the token belongs to another app (or the topic suffix is wrong). A whole batch of these means a configuration mistake, not dead tokens."
            case .badCertificateEnvironment:
                return
                    "The credential is for the other environment: use .sandbox for development builds and .production for App Store and TestFlight builds."
            case .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
                return
                    "The key is for the other environment: a key can be restricted to sandbox or production. Use the environment the key was made for, or a key for this one; state the key's scope (TokenConnector's scope:) to have this refused before sending."
            case .expiredProviderToken:
                return "The JWT is older than an hour: check the server's clock."
            case .invalidProviderToken, .missingProviderToken:
                return "Check the key id, team id and .p8 key of the token connector."
            case .unrelatedKeyIdInToken:
                return
                    "APNs ties a connection to the key of its first push, and this token was signed with another key that is not its related key: send it again on a new connection (the token connector does so once by itself), and keep tokens of unrelated keys on connections of their own (one token connector per key; a topic key and its related key may share one: TokenConnector's relatedKey:)."
            case .tooManyProviderTokenUpdates:
                return
                    "Share one token connector per key instead of creating one per request, then retry after a while: APNs accepts a new token at most every 20 minutes."
            case .tooManyRequests:
                return "Slow down: too many pushes to this device; retry later."
            case .payloadTooLarge:
                return "Shorten the payload."
            case .topicDisallowed:
                return
                    "Check the bundle id: it must belong to the team, to the topic-specific key's apps (token), or to the certificate. State a topic key's scope (TokenConnector's scope:) to have this refused before sending."
            case .badTopic, .missingTopic, .topicMismatch:
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
            /// Send once more on a new connection: APNs tied the one that answered to another key.
            case onNewConnection
            /// A server-side problem: retry with exponential back-off.
            case withBackoff
        }

        // 400
        /// `BadCollapseId`: the collapse id is longer than 64 bytes.
        public static let badCollapseId = Reason(rawValue: "BadCollapseId")
        /// `BadDeviceToken`: the token is not a device token of this environment: check sandbox versus production before forgetting it.
        public static let badDeviceToken = Reason(rawValue: "BadDeviceToken")
        /// `BadExpirationDate`: the expiration is not an integer or is not allowed (a stored message on a no-storage channel).
        public static let badExpirationDate = Reason(rawValue: "BadExpirationDate")
        /// `BadMessageId`: the `apns-id` is not a canonical UUID.
        public static let badMessageId = Reason(rawValue: "BadMessageId")
        /// `BadPriority`: the priority is not allowed for this push type.
        public static let badPriority = Reason(rawValue: "BadPriority")
        /// `BadTopic`: the topic is not valid for this push type.
        public static let badTopic = Reason(rawValue: "BadTopic")
        /// `DeviceTokenNotForTopic`: the token belongs to another app (or topic): usually a configuration mistake.
        public static let deviceTokenNotForTopic = Reason(rawValue: "DeviceTokenNotForTopic")
        /// `DuplicateHeaders`: A header appeared more than once.
        public static let duplicateHeaders = Reason(rawValue: "DuplicateHeaders")
        /// `IdleTimeout`: the connection was idle too long; APNs closes it.
        public static let idleTimeout = Reason(rawValue: "IdleTimeout")
        /// `InvalidPushType`: the `apns-push-type` is not one APNs knows.
        public static let invalidPushType = Reason(rawValue: "InvalidPushType")
        /// `MissingDeviceToken`: the path has no device token.
        public static let missingDeviceToken = Reason(rawValue: "MissingDeviceToken")
        /// `MissingTopic`: no `apns-topic` where one is required.
        public static let missingTopic = Reason(rawValue: "MissingTopic")
        /// `PayloadEmpty`: the body is empty.
        public static let payloadEmpty = Reason(rawValue: "PayloadEmpty")
        /// `TopicDisallowed`: the credential may not send to this topic.
        public static let topicDisallowed = Reason(rawValue: "TopicDisallowed")
        // 403
        /// `BadCertificate`: the client certificate is not valid (or not for this push type).
        public static let badCertificate = Reason(rawValue: "BadCertificate")
        /// `BadCertificateEnvironment`: the client certificate is for the other environment.
        public static let badCertificateEnvironment = Reason(rawValue: "BadCertificateEnvironment")
        /// `ExpiredProviderToken`: the JWT is older than an hour; the token connector mints a new one and retries once.
        public static let expiredProviderToken = Reason(rawValue: "ExpiredProviderToken")
        /// `Forbidden`: the credential may not do this.
        public static let forbidden = Reason(rawValue: "Forbidden")
        /// `InvalidProviderToken`: the JWT does not verify: wrong key id, team id or key.
        public static let invalidProviderToken = Reason(rawValue: "InvalidProviderToken")
        /// `MissingProviderToken`: A token connection sent no `authorization` header.
        public static let missingProviderToken = Reason(rawValue: "MissingProviderToken")
        /// `UnrelatedKeyIdInToken`: the JWT's key id does not belong to the team.
        public static let unrelatedKeyIdInToken = Reason(rawValue: "UnrelatedKeyIdInToken")
        /// `BadEnvironmentKeyIdInToken`: the key is for the other environment.
        public static let badEnvironmentKeyIdInToken = Reason(rawValue: "BadEnvironmentKeyIdInToken")
        /// `BadEnvironmentKeyInToken`: the same, as APNs has also been seen to spell it.
        public static let badEnvironmentKeyInToken = Reason(rawValue: "BadEnvironmentKeyInToken")
        // 404, 405
        /// `BadPath`: the request path is not one APNs serves.
        public static let badPath = Reason(rawValue: "BadPath")
        /// `MethodNotAllowed`: the HTTP method is not allowed on this path.
        public static let methodNotAllowed = Reason(rawValue: "MethodNotAllowed")
        // 410
        /// `ExpiredToken`: the device token has expired (410): stop sending to it.
        public static let expiredToken = Reason(rawValue: "ExpiredToken")
        /// `Unregistered`: the app was removed from the device or the token is no longer valid (410, with a timestamp): stop sending to it unless it registered again after that time.
        public static let unregistered = Reason(rawValue: "Unregistered")
        // 413
        /// `PayloadTooLarge`: the payload is larger than the push type allows.
        public static let payloadTooLarge = Reason(rawValue: "PayloadTooLarge")
        // 429
        /// `TooManyProviderTokenUpdates`: new JWTs for this key came more often than every 20 minutes.
        public static let tooManyProviderTokenUpdates = Reason(rawValue: "TooManyProviderTokenUpdates")
        /// `TooManyRequests`: too many pushes to this device in a short time.
        public static let tooManyRequests = Reason(rawValue: "TooManyRequests")
        // 500, 503
        /// `InternalServerError`: an error inside APNs; retry with back-off.
        public static let internalServerError = Reason(rawValue: "InternalServerError")
        /// `ServiceUnavailable`: APNs is unavailable; retry with back-off (honouring `Retry-After`).
        public static let serviceUnavailable = Reason(rawValue: "ServiceUnavailable")
        /// `Shutdown`: the APNs server is shutting down; reconnect and retry.
        public static let shutdown = Reason(rawValue: "Shutdown")
        // Broadcast and channel management
        /// `FeatureNotEnabled`: broadcast push is not enabled for this app (enable it in the developer account).
        public static let featureNotEnabled = Reason(rawValue: "FeatureNotEnabled")
        /// `MissingChannelId`: A broadcast or channel request without `apns-channel-id`.
        public static let missingChannelId = Reason(rawValue: "MissingChannelId")
        /// `BadChannelId`: the channel id is not a valid channel id.
        public static let badChannelId = Reason(rawValue: "BadChannelId")
        /// `ChannelNotRegistered`: no such channel for this app in this environment.
        public static let channelNotRegistered = Reason(rawValue: "ChannelNotRegistered")
        /// `BadRequestParams`: A parameter of a channel request is invalid.
        public static let badRequestParams = Reason(rawValue: "BadRequestParams")
        /// `BadRequestPayload`: the body of a broadcast or channel request is invalid.
        public static let badRequestPayload = Reason(rawValue: "BadRequestPayload")
        /// `MissingPushType`: A broadcast without `apns-push-type`.
        public static let missingPushType = Reason(rawValue: "MissingPushType")
        /// `CannotCreateChannelConfig`: the app already has the most channels APNs allows (10,000).
        public static let cannotCreateChannelConfig = Reason(rawValue: "CannotCreateChannelConfig")
        /// `TopicMismatch`: the bundle id does not match the credential.
        public static let topicMismatch = Reason(rawValue: "TopicMismatch")

        /// Every reason of <doc:ProtocolReference#Responses> with its HTTP status.
        public static let allKnown: [Reason] = statusByReason.map(\.0)

        /// The status Apple sends with each documented reason.
        public static let statusByReason: [(Reason, Int)] = [
            (.badCollapseId, 400), (.badDeviceToken, 400), (.badExpirationDate, 400), (.badMessageId, 400),
            (.badPriority, 400), (.badTopic, 400), (.deviceTokenNotForTopic, 400), (.duplicateHeaders, 400),
            (.idleTimeout, 400), (.invalidPushType, 400), (.missingDeviceToken, 400), (.missingTopic, 400),
            (.payloadEmpty, 400), (.topicDisallowed, 400),
            (.badCertificate, 403), (.badCertificateEnvironment, 403), (.expiredProviderToken, 403),
            (.forbidden, 403), (.invalidProviderToken, 403), (.missingProviderToken, 403),
            (.unrelatedKeyIdInToken, 403), (.badEnvironmentKeyIdInToken, 403), (.badEnvironmentKeyInToken, 403),
            (.badPath, 404), (.methodNotAllowed, 405), (.expiredToken, 410), (.unregistered, 410),
            (.payloadTooLarge, 413), (.tooManyProviderTokenUpdates, 429), (.tooManyRequests, 429),
            (.internalServerError, 500), (.serviceUnavailable, 503), (.shutdown, 503),
            (.featureNotEnabled, 400), (.missingChannelId, 400), (.badChannelId, 400),
            (.channelNotRegistered, 400), (.badRequestParams, 400), (.badRequestPayload, 400),
            (.missingPushType, 400), (.cannotCreateChannelConfig, 400), (.topicMismatch, 403),
        ]
    }
}
