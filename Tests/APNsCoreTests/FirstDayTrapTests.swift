import APNs
import Foundation
import Testing

/// What a first day trips on, refused before any byte with a message that says the fix: a token's
/// hex text passed as its bytes, and dates in milliseconds where APNs takes seconds. And what a
/// first day expects to compile does: interpolated Live Activity alert text.
@Suite struct FirstDayTrapTests {
    static let hex = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    /// 2023-11-14 in milliseconds: what `Date().timeIntervalSince1970 * 1000` gives, read as seconds.
    static let milliseconds = 1_700_000_000_000

    @Test func theHexTextsBytesAreNotAToken() throws {
        let expected = APNsError.validation(
            .invalidDeviceToken(
                "these 64 bytes are the token's hex text, not the token's 32 bytes: pass the text to Device(token:) instead of its UTF-8 to Device(tokenBytes:)"
            ))
        #expect(throws: expected) { try Device(tokenBytes: Data(Self.hex.utf8)) }
        #expect(throws: expected) { try Device(tokenBytes: Array(Self.hex.uppercased().utf8)) }
        // The token's own bytes, and the same text given as text, are one device.
        let bytes = stride(from: 0, to: Self.hex.count, by: 2).map { offset -> UInt8 in
            let start = Self.hex.index(Self.hex.startIndex, offsetBy: offset)
            return UInt8(Self.hex[start..<Self.hex.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
        #expect(try Device(tokenBytes: bytes) == Device(token: Self.hex))
        // Fewer than 16 bytes that happen to be hex digits may be a (test) token's own bytes.
        #expect(try Device(tokenBytes: Array("abcd".utf8)).token == "61626364")
    }

    @Test func aLiveActivityDateInMillisecondsIsRefused() throws {
        let inMilliseconds = Date(timeIntervalSince1970: Double(Self.milliseconds))
        let update = LiveActivityNotification(
            bundleID: "com.example.app", update: ["stops": 2], timestamp: inMilliseconds)
        #expect(throws: APNsError.validation(.dateInMilliseconds(key: "timestamp"))) {
            try update.request(to: Device(token: Self.hex))
        }
        let stale = LiveActivityNotification(
            bundleID: "com.example.app", update: ["stops": 2], timestamp: Date(timeIntervalSince1970: 1_700_000_000),
            staleDate: inMilliseconds)
        #expect(throws: APNsError.validation(.dateInMilliseconds(key: "stale-date"))) {
            try stale.request(to: Device(token: Self.hex))
        }
        #expect(
            APNsValidationError.dateInMilliseconds(key: "timestamp").description
                == "The date for timestamp is past the year 5000: it was made from milliseconds. APNs takes UNIX seconds: divide by 1000 (Date(timeIntervalSince1970: Double(milliseconds) / 1000))."
        )
        // A payload of any origin (bytes given to the request) is held to the same rule.
        var request = try LiveActivityNotification(
            bundleID: "com.example.app", update: ["stops": 2], timestamp: Date(timeIntervalSince1970: 1_700_000_000)
        ).request(to: Device(token: Self.hex))
        request.body = Array(#"{"aps":{"timestamp":\#(Self.milliseconds),"event":"update","content-state":{}}}"#.utf8)
        #expect(throws: APNsValidationError.dateInMilliseconds(key: "timestamp")) {
            try request.checkRules(for: .token)
        }
    }

    @Test func anExpirationInMillisecondsIsRefused() {
        let expected = APNsError.validation(.dateInMilliseconds(key: "apns-expiration"))
        #expect(throws: expected) { try Expiration(unixSeconds: Self.milliseconds) }
        #expect(throws: expected) { try Expiration.at(Date(timeIntervalSince1970: Double(Self.milliseconds))) }
        #expect((try? Expiration(unixSeconds: Expiration.millisecondsThreshold - 1)) != nil)
    }

    @Test func liveActivityAlertTextMayBeInterpolated() throws {
        let stops = 2
        let headline = "Order 42"
        let alert = LiveActivityAlert(title: .text(headline), body: "Your order is \(stops) stops away")
        #expect(alert.title == .text("Order 42"))
        #expect(alert.body == .text("Your order is 2 stops away"))
    }
}
