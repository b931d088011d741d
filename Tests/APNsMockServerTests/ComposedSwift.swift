// swift-format-ignore-file: written by a test, compared byte for byte with what the composer writes.
// The Swift the console's composer shows, one function a composition (ComposerTests.cases),
// compiled with the tests: ComposerTests.theSwiftItShowsCompilesAndMakesTheBytes checks that
// this is what the composer writes and that each function makes the request it shows.
// Written by that test: APNS_REWRITE_COMPOSED_SWIFT=1 swift test --filter ComposerTests
import APNs
import Foundation

enum ComposedSwift {
    static let cases: [String: @Sendable () throws -> APNsRequest] = [
        "alertWithTitleAndBadge": alertWithTitleAndBadge,
        "alertWithEveryField": alertWithEveryField,
        "alertLow": alertLow,
        "background": background,
        "backgroundWithoutData": backgroundWithoutData,
        "voip": voip,
        "complication": complication,
        "pushtotalk": pushtotalk,
        "widgets": widgets,
        "controls": controls,
        "location": location,
        "fileprovider": fileprovider,
        "mdm": mdm,
        "accessory": accessory,
        "liveActivityStart": liveActivityStart,
        "liveActivityUpdate": liveActivityUpdate,
        "liveActivityEnd": liveActivityEnd,
    ]

    static func alertWithTitleAndBadge() throws -> APNsRequest {
        let notification = AlertNotification(bundleID: "com.example.app") {
            Alert {
                Title("Hello")
            }
            Badge(1)
        }
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func alertWithEveryField() throws -> APNsRequest {
        let notification = AlertNotification(
            bundleID: "com.example.app",
            appData: try RawJSONObject(#"{"gameID":7,"teams":["a","b"]}"#),
            priority: .powerConsiderate,
            expiration: try Expiration(unixSeconds: 1900000000),
            collapseID: "score",
            apnsID: APNsID("123e4567-e89b-12d3-a456-4266554400a0")
        ) {
            Alert {
                Title(#"Goal "now""#)
                Subtitle(localizedKey: "SUB", arguments: ["a", "b"])
                Body("2-1\nlate")
                LaunchImage("l.png")
            }
            Badge(3)
            Sound.critical("siren.caf", volume: 0.5)
            ThreadID("match")
            Category("GOAL")
            InterruptionLevel.timeSensitive
            RelevanceScore(0.75)
            ContentAvailable()
            MutableContent()
            TargetContentID("m1")
            FilterCriteria("sports")
        }
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func alertLow() throws -> APNsRequest {
        let notification = AlertNotification(
            bundleID: "com.example.app",
            priority: .low
        ) {
            Alert {
                Body("Quiet")
            }
            Sound("ping.aiff")
        }
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func background() throws -> APNsRequest {
        let notification = BackgroundNotification(
            bundleID: "com.example.app",
            appData: try RawJSONObject(#"{"sync":true}"#)
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func backgroundWithoutData() throws -> APNsRequest {
        let notification = BackgroundNotification(
            bundleID: "com.example.app",
            expiration: .immediately
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func voip() throws -> APNsRequest {
        let notification = VoIPNotification(
            bundleID: "com.example.app",
            appData: try RawJSONObject(##"{"caller":"Ann","tag":"a\"#b"}"##)
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func complication() throws -> APNsRequest {
        let notification = ComplicationNotification(
            bundleID: "com.example.app",
            appData: NoAppData(),
            priority: .powerConsiderate
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func pushtotalk() throws -> APNsRequest {
        let notification = PushToTalkNotification(
            bundleID: "com.example.app",
            appData: try RawJSONObject(#"{"channel":2}"#)
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func widgets() throws -> APNsRequest {
        let notification = WidgetNotification(
            bundleID: "com.example.app",
            priority: .powerConsiderate,
            collapseID: "w"
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func controls() throws -> APNsRequest {
        let notification = ControlsNotification(
            bundleID: "com.example.app"
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func location() throws -> APNsRequest {
        let notification = LocationNotification(
            bundleID: "com.example.app",
            expiration: try Expiration(unixSeconds: 1900000000)
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func fileprovider() throws -> APNsRequest {
        let notification = FileProviderNotification(
            bundleID: "com.example.app",
            containerIdentifier: "NSFileProviderRootContainerItemIdentifier",
            domain: "docs"
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func mdm() throws -> APNsRequest {
        let notification = MDMNotification(
            topic: "com.apple.mgmt.External.1234",
            pushMagic: "5F2C9E1A"
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func accessory() throws -> APNsRequest {
        let notification = AccessoryNotification(
            bundleID: "com.example.app",
            encryptedData: "AAEC",
            sessionIdentifier: "s-1",
            keyID: "AQI=",
            messageIndex: 4
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func liveActivityStart() throws -> APNsRequest {
        let notification = LiveActivityNotification(
            bundleID: "com.example.app",
            start: try RawJSONObject(#"{"score":"0-0"}"#),
            attributesType: "MatchAttributes",
            attributes: try RawJSONObject(#"{"home":"A"}"#),
            alert: LiveActivityAlert(title: "Kick-off", body: "A v B", sound: "whistle.caf"),
            timestamp: Date(timeIntervalSince1970: 1765000000),
            pushInput: .token,
            staleDate: Date(timeIntervalSince1970: 1765003600),
            relevanceScore: 1.0
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }

    static func liveActivityUpdate() throws -> APNsRequest {
        let notification = LiveActivityNotification(
            bundleID: "com.example.app",
            update: try RawJSONObject(#"{"score":"1-0"}"#),
            timestamp: Date(timeIntervalSince1970: 1765000060),
            alert: LiveActivityAlert(title: .localized(key: "GOAL", arguments: ["A"]), body: "1-0")
        )
        let channel = try BroadcastChannel(id: "Y2hhbm5lbC0wMDAwMDAwMQ==", bundleID: "com.example.app")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: channel)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: channel)
        return request
    }

    static func liveActivityEnd() throws -> APNsRequest {
        let notification = LiveActivityNotification(
            bundleID: "com.example.app",
            end: try RawJSONObject(#"{"score":"2-1"}"#),
            timestamp: Date(timeIntervalSince1970: 1765005400),
            dismissalDate: Date(timeIntervalSince1970: 1765009000),
            priority: .powerConsiderate
        )
        let device = try Device(token: "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0")
        // The exact request (method, path, headers, body) that `send` writes:
        let request = try notification.request(to: device)
        // Sent through a connector made once for the app's life:
        // try await send(notification, via: connector, to: device)
        return request
    }
}
