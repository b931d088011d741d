import Crypto
import Foundation

/// A webhook endpoint's secret and the signature of each message sent to it, as Standard Webhooks
/// defines them (standardwebhooks.com), so that an app verifies what the gateway sends with one of
/// that specification's libraries: the headers `webhook-id` (the message's id, the same on every
/// try), `webhook-timestamp` (UNIX seconds of this try) and `webhook-signature`
/// (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's bytes).
///
/// Thread safety: an immutable value; `Sendable`. Its `description` does not show the secret.
package struct WebhookSecret: Sendable, Hashable, CustomStringConvertible {
    /// The secret's bytes (24 to 64).
    private let bytes: [UInt8]

    /// The secret as Standard Webhooks writes it: `whsec_` and the base64 of its bytes.
    package var text: String { "whsec_" + Data(bytes).base64EncodedString() }

    /// A secret read from its text (`whsec_…`); nil when it is not one.
    package init?(text: String) {
        let encoded = text.hasPrefix("whsec_") ? String(text.dropFirst(6)) : text
        guard let decoded = Data(base64Encoded: encoded), (24...64).contains(decoded.count) else { return nil }
        bytes = Array(decoded)
    }

    /// A new random secret of 32 bytes.
    package static func make() -> WebhookSecret {
        var generator = SystemRandomNumberGenerator()
        let made = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return WebhookSecret(bytes: made)
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// The `webhook-signature` of a message's try: `v1,` and the base64 HMAC-SHA256 of
    /// `id.timestamp.body`.
    package func signature(id: String, timestamp: Int, body: [UInt8]) -> String {
        var signed = Array("\(id).\(timestamp).".utf8)
        signed += body
        let code = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: bytes))
        return "v1," + Data(code).base64EncodedString()
    }

    /// The three headers of a message's try at `timestamp`.
    package func headers(id: String, timestamp: Int, body: [UInt8]) -> [(String, String)] {
        [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(id: id, timestamp: timestamp, body: body)),
        ]
    }

    package var description: String { "WebhookSecret(redacted)" }
}
