extension APNsRequest {
    /// Checks this request against its push type's rules (<doc:ProtocolReference#Push-types> and <doc:ProtocolReference#Broadcast-channels>) for a
    /// connection that authenticates with `method`: the authentication the push type accepts, its
    /// priorities, topic, required expiration, payload size, and whether it may go to a broadcast
    /// channel, and for a Live Activity its event, the keys that event needs and its timestamp
    /// (read from what the writer noted while writing the body, not parsed again). Channel
    /// management requests (any authentication) pass.
    ///
    /// Every send of swift-apns runs this check before any I/O, and so does every shipped
    /// connector's `perform`: what the compiler prevents for swift-apns' own push types (an MDM
    /// push through a token connector, priority 1 on a widget push, a widget push to a channel)
    /// is refused at run time too, for a request built by hand or by a push type defined
    /// elsewhere. A connector of your own can call it first:
    ///
    /// ```swift
    /// func perform(_ request: APNsRequest) async throws -> APNsHTTPResponse {
    ///     try request.checkRules(for: Authentication.method)
    ///     …
    /// }
    /// ```
    /// - Throws: ``APNsValidationError`` naming the rule.
    public func checkRules(for method: AuthenticationMethod) throws(APNsValidationError) {
        if service == .management { return }
        // APNs takes a request without apns-push-type as an alert (protocol reference, Device requests).
        let name = self[header: .apnsPushType] ?? PushType.alert.rawValue
        guard let pushType = PushType(rawValue: name) else { throw .unknownPushType(name) }
        guard pushType.authentication.contains(method) else {
            throw .authenticationNotAllowed(pushType: pushType, method: method)
        }
        if let value = self[header: .apnsPriority] {
            guard let priority = PushPriority(headerValue: value), pushType.allowedPriorities.contains(priority) else {
                throw .priorityNotAllowed(pushType: pushType, priority: value)
            }
        }
        if let required = pushType.requiredExpiration, self[header: .apnsExpiration] != String(required) {
            throw .expirationRequired(pushType: pushType, seconds: required)
        }
        let limit: Int
        switch service {
        case .broadcast:
            guard let broadcastLimit = pushType.maximumBroadcastPayloadSize else { throw .notBroadcastable(pushType) }
            limit = broadcastLimit
        case .device, .management:
            limit = pushType.maximumPayloadSize
            if let topic = self[header: .apnsTopic], pushType.bundleID(fromTopic: topic) == nil {
                throw pushType == .mdm
                    ? .invalidMDMTopic(topic) : .topicNotForPushType(pushType: pushType, topic: topic)
            }
        }
        guard body.count <= limit else { throw .payloadTooLarge(pushType: pushType, size: body.count, limit: limit) }
        if pushType == .liveactivity { try LiveActivityRules.check(payloadFacts, service: service) }
    }
}
