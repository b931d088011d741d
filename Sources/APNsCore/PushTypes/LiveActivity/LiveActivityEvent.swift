/// The Live Activity events, as types: a `LiveActivityNotification`'s third type parameter fixes
/// its event, and with it what the notification may carry (<doc:ProtocolReference#Live-Activities>).
public enum LiveActivityEvent {
    /// Starts an activity on a push-to-start token: needs attributes, their type name and an alert.
    public enum Start: LiveActivityEventKind {
        /// `start`.
        public static var name: String { "start" }
    }
    /// Updates the content state.
    public enum Update: LiveActivityEventKind {
        /// `update`.
        public static var name: String { "update" }
    }
    /// Ends the activity with its final state; may set a dismissal date.
    public enum End: LiveActivityEventKind {
        /// `end`.
        public static var name: String { "end" }
    }
}

/// One of ``LiveActivityEvent/Start``, ``LiveActivityEvent/Update`` or ``LiveActivityEvent/End``.
public protocol LiveActivityEventKind: Sendable {
    /// The `event` value.
    static var name: String { get }
}

/// The attributes of an update or end, which carry none.
public typealias NoAttributes = NoAppData

/// A Live Activity start notification.
public typealias LiveActivityStart<ContentState: Encodable & Sendable, Attributes: Encodable & Sendable> =
    LiveActivityNotification<ContentState, Attributes, LiveActivityEvent.Start>
/// A Live Activity update notification.
public typealias LiveActivityUpdate<ContentState: Encodable & Sendable> =
    LiveActivityNotification<ContentState, NoAttributes, LiveActivityEvent.Update>
/// A Live Activity end notification.
public typealias LiveActivityEnd<ContentState: Encodable & Sendable> =
    LiveActivityNotification<ContentState, NoAttributes, LiveActivityEvent.End>

/// How a started activity receives its updates: exactly one of a per-activity push token or a
/// broadcast channel, so both at once cannot be written.
public enum LiveActivityPushInput: Hashable, Sendable {
    /// `"input-push-token":1`: the activity gets its own push token.
    case token
    /// `"input-push-channel":"<id>"`: the activity subscribes to a broadcast channel (its id is
    /// checked when the ``BroadcastChannel`` is made).
    case channel(BroadcastChannel)
}
