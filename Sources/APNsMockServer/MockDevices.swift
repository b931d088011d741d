import APNs
import Foundation

/// A device the mock made for an app: a token to send to, and whether the app was removed.
///
/// Thread safety: a value type; `Sendable`.
public struct MockDevice: Sendable, Hashable {
    /// The device token, 32 random bytes in lowercase hex.
    public let token: String
    /// The app it was made for.
    public let bundleID: String
    /// The APNs environment its token belongs to.
    public let environment: MockAPNsServer.Environment
    /// When the app was removed (``MockAPNsServer/removeApp(from:)``): every later push to the
    /// token is answered 410 Unregistered with this time. Nil while it is installed.
    public internal(set) var appRemovedAt: Date?
}

extension MockAPNsServer {
    /// Makes a device for `bundleID`: a token of 32 random bytes the mock accepts until its app is
    /// removed. What the console's `POST /api/devices` does.
    @discardableResult
    public func makeDevice(bundleID: String, environment: Environment = .sandbox) -> MockDevice {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let device = MockDevice(
            token: bytes.map { String(format: "%02x", $0) }.joined(), bundleID: bundleID, environment: environment)
        state.addDevice(device)
        return device
    }

    /// Removes the app from the device with `token` (one ``makeDevice(bundleID:environment:)``
    /// made, or any token): from now on every push to it is answered 410 Unregistered with this
    /// time, as APNs answers a token whose app was uninstalled. Returns that time.
    @discardableResult
    public func removeApp(from token: String) -> Date {
        let now = state.configuration.clock()
        reject(deviceToken: token, with: .unregistered, timestamp: now)
        state.markAppRemoved(token: token.lowercased(), at: now)
        return now
    }

    /// The devices ``makeDevice(bundleID:environment:)`` made, oldest first.
    public var devices: [MockDevice] { state.devices }
}
