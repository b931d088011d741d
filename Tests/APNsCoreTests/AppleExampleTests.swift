import APNs
import Foundation
import Testing

/// Apple's printed examples (protocol reference, Examples Apple prints) that alert and background can express, byte for
/// byte in the canonical order, with their exact requests.
@Suite struct AppleExampleTests {
    let device = try! Device(token: "00FC13ADFF785122B4AD28809A3420982341241421348097878E577C991DE8F0")

    struct Game: Encodable, Sendable { var gameID: String }
    struct Message: Encodable, Sendable { var messageID: String }
    struct Acme: Encodable, Sendable { var acme1: String; var acme2: Int }

    @Test func gameRequestWithSubtitleCategoryAndAppData() throws {
        let notification = AlertNotification(bundleID: "com.example.poker", appData: Game(gameID: "12345678")) {
            Alert {
                Title("Game Request")
                Subtitle("Five Card Draw")
                Body("Bob wants to play poker")
            }
            Category("GAME_INVITATION")
        }
        let request = try notification.request(to: device)
        #expect(
            request.bodyText
                == #"{"aps":{"alert":{"title":"Game Request","subtitle":"Five Card Draw","body":"Bob wants to play poker"},"category":"GAME_INVITATION"},"gameID":"12345678"}"#
        )
        #expect(request.method == .post)
        #expect(request.path == "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        #expect(
            request.headers == [
                .init(name: "apns-push-type", value: "alert"),
                .init(name: "apns-topic", value: "com.example.poker"),
                .init(name: "apns-priority", value: "10"),
            ])
    }

    @Test func badgeAndSoundWithMessageID() throws {
        let notification = AlertNotification(bundleID: "com.example.app", appData: Message(messageID: "ABCDEFGHIJ")) {
            Badge(9)
            Sound("bingbong.aiff")
        }
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"badge":9,"sound":"bingbong.aiff"},"messageID":"ABCDEFGHIJ"}"#)
    }

    @Test func localizedBody() throws {
        let notification = AlertNotification(bundleID: "com.example.app") {
            Alert { Body(localizedKey: "GAME_PLAY_REQUEST_FORMAT", arguments: ["Shelly", "Rick"]) }
        }
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"alert":{"loc-key":"GAME_PLAY_REQUEST_FORMAT","loc-args":["Shelly","Rick"]}}}"#)
    }

    @Test func backgroundWithAppData() throws {
        let notification = BackgroundNotification(bundleID: "com.example.app", appData: Acme(acme1: "bar", acme2: 42))
        let request = try notification.request(to: device)
        #expect(request.bodyText == #"{"aps":{"content-available":1},"acme1":"bar","acme2":42}"#)
        #expect(
            request.headers == [
                .init(name: "apns-push-type", value: "background"),
                .init(name: "apns-topic", value: "com.example.app"),
                .init(name: "apns-priority", value: "5"),
            ])
    }
}
