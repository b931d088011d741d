/// The result for one device of a bulk send: accepted (with its apns-id) or its ``APNsError``
/// (a rejection, or a transport failure that says whether the push may have been delivered).
public struct BulkOutcome: Sendable {
    /// The device this outcome is for.
    public let device: Device
    /// APNs' acceptance, or the ``APNsError`` for this device.
    public let result: Result<APNsResponse, APNsError>
    /// How long this device's send took, from when its request was started (after waiting for a
    /// free stream under `maximumInFlight`) until its outcome arrived, retries included.
    public let duration: Duration

    init(device: Device, result: Result<APNsResponse, APNsError>, duration: Duration = .zero) {
        self.device = device
        self.result = result
        self.duration = duration
    }

    /// The rejection, when APNs refused this device (for example to drop `.unregistered` tokens).
    public var rejection: APNsRejection? {
        if case .failure(.rejected(let rejection)) = result { return rejection }
        return nil
    }

    /// The transport failure, when no answer came back for this device.
    public var transportFailure: TransportError? {
        if case .failure(.transport(let failure)) = result { return failure }
        return nil
    }

    /// Whether APNs accepted the push for this device.
    public var isAccepted: Bool {
        if case .success = result { return true }
        return false
    }
}

/// What a bulk send did, counted by outcome.
///
/// ```swift
/// let summary = try await send(notification, via: connector, to: devices)
/// print(summary)   // "9998 accepted, 2 rejected, 0 failed (0 may have been delivered)"
/// ```
public struct BulkSendSummary: Hashable, Sendable, CustomStringConvertible {
    /// Devices APNs accepted the push for.
    public var accepted = 0
    /// Devices APNs refused (see each ``BulkOutcome/rejection``).
    public var rejected = 0
    /// Devices for which no answer came back (see each ``BulkOutcome/transportFailure``).
    public var failed = 0
    /// Of ``failed``, those whose push may have been delivered (``Delivery/unknown``).
    public var deliveryUnknown = 0
    /// Whether the send was cancelled before every device had an outcome: the devices without
    /// one were not sent to, or their push was cancelled in flight.
    public var cancelled = false
    /// The devices APNs said to stop using (410 `Unregistered` with its timestamp) and those it
    /// refused as not tokens for this topic or environment: persist them (see ``TokensToForget``).
    public var tokensToForget = TokensToForget()

    /// Of ``rejected``, the devices APNs refused as 400 `BadDeviceToken`.
    public var badDeviceTokens = 0

    /// An empty summary.
    public init() {}

    /// The one cause most outcomes share, said for the log and the user, or nil: when at least
    /// ten devices, and half of every outcome, were refused `BadDeviceToken`, the tokens are most
    /// likely of the other environment (a bulk send of development builds' sandbox tokens to
    /// production is the common case), and forgetting them would lose every user.
    public var likelyCause: String? {
        guard badDeviceTokens >= 10, badDeviceTokens * 2 >= total else { return nil }
        return
            "\(badDeviceTokens) of \(total) devices were refused BadDeviceToken: the tokens are most likely of the other environment (development builds register sandbox tokens, App Store and TestFlight builds production ones). Check the connector's environment before forgetting them."
    }

    /// Every outcome counted.
    public var total: Int { accepted + rejected + failed }

    /// Counts `outcome`; with `collectingTokens`, also adds its device to ``tokensToForget`` when
    /// APNs said to stop using it.
    package mutating func count(_ outcome: BulkOutcome, collectingTokens: Bool = true) {
        switch outcome.result {
        case .success: accepted += 1
        case .failure(.rejected(let rejection)):
            rejected += 1
            if rejection.reason == .badDeviceToken { badDeviceTokens += 1 }
            if collectingTokens { tokensToForget.collect(rejection, for: outcome.device) }
        case .failure(let error):
            failed += 1
            if error.mayHaveBeenDelivered { deliveryUnknown += 1 }
        }
    }

    /// A readable form for logs and test failures; it never contains a secret.
    public var description: String {
        "\(accepted) accepted, \(rejected) rejected, \(failed) failed (\(deliveryUnknown) may have been delivered)"
            + (cancelled ? ", cancelled" : "")
    }
}
