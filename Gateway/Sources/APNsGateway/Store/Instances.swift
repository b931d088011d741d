import Foundation

// What the store keeps of running senders: each instance's registration and heartbeat.

/// A running sender (one gateway process), as registered in the store.
package struct GatewayInstance: Sendable, Hashable {
    /// Its name in claims (`lease_owner`).
    package var name: String
    /// The host it runs on, and its process id there: a process gone from this host is dead
    /// whatever its last heartbeat says.
    package var host: String
    package var processID: Int32
    /// This start of the process (a random id): a registration of the same name by an earlier
    /// process is not this one's.
    package var incarnation: String
    /// How often it records its heartbeat (``Dispatcher/Configuration/heartbeat``).
    package var heartbeat: Duration

    package init(
        name: String, host: String = ProcessInfo.processInfo.hostName,
        processID: Int32 = ProcessInfo.processInfo.processIdentifier, incarnation: String = UUID().uuidString,
        heartbeat: Duration = .seconds(1)
    ) {
        self.name = name
        self.host = host
        self.processID = processID
        self.incarnation = incarnation
        self.heartbeat = heartbeat
    }

    /// Whether a registration of this instance's name, made from this host under this process's
    /// own id by another start, is that of an earlier start that has died: its heartbeat is older
    /// than three of this one's.
    ///
    /// A container restarted after a crash runs the gateway as PID 1 again, under the same
    /// hostname, so under the same default name, and `kill` finds this very process under the
    /// registered id: whether the earlier start lives cannot be asked of the system. Within one
    /// process namespace it is surely dead (a process id belongs to one process at a time); from
    /// another namespace, the one live process it could be is a second container given the same
    /// hostname and name, which the name's rule already forbids. A live sender records its
    /// heartbeat every ``heartbeat``; three missed is a stop, not a delay.
    package func isEarlierStart(
        host: String, processID: Int32, incarnation: String, lastHeartbeat: Date, now: Date
    ) -> Bool {
        host == self.host && processID == self.processID && incarnation != self.incarnation
            && now.timeIntervalSince(lastHeartbeat) > (heartbeat * 3).seconds
    }

    /// The owner of the webhook messages a sender of this name and start holds
    /// (``WebhookSender/Configuration/instance`` with this start's incarnation): registering
    /// releases exactly what dead starts' webhook senders held, never what this start's own sender
    /// claimed before its dispatcher registered (``GatewayStore/register(_:now:staleAfter:)``).
    package static func webhookOwner(name: String, incarnation: String) -> String { name + "#" + incarnation }

    /// Whether a registration by `host` and `processID` names this process: an earlier start of it
    /// (``isEarlierStart(host:processID:incarnation:lastHeartbeat:now:)`` once its heartbeats stop).
    package func sharesProcessID(host: String, processID: Int32) -> Bool {
        host == self.host && processID == self.processID
    }

    /// Whether a registered sender is dead: no heartbeat for `staleAfter`, or registered from this
    /// host by a process that no longer exists.
    package static func isDead(
        host: String, processID: Int32, lastHeartbeat: Date, now: Date, staleAfter: Duration,
        thisHost: String = ProcessInfo.processInfo.hostName
    ) -> Bool {
        if now.timeIntervalSince(lastHeartbeat) > staleAfter.seconds { return true }
        guard host == thisHost, processID > 0 else { return false }
        return kill(processID, 0) != 0 && errno == ESRCH
    }
}

/// What ``GatewayStore/register(_:now:staleAfter:)`` did.
package enum InstanceRegistration: Sendable, Equatable {
    /// Registered; `releasedClaims` device-sends dead senders held were queued again.
    case registered(releasedClaims: Int)
    /// A live sender holds the name.
    case nameInUse(host: String, processID: Int32, lastHeartbeat: Date)
}
