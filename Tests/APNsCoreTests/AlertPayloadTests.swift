import APNs
import Foundation
import Testing

@Suite struct AlertPayloadTests {
    let device = try! Device(token: "abcd")

    @Test func everyKeyInCanonicalOrder() throws {
        // Components written in reverse order still serialise in the order of protocol reference, The aps dictionary.
        let notification = AlertNotification(bundleID: "com.example.app") {
            FilterCriteria("work")
            RelevanceScore(0.5)
            InterruptionLevel.timeSensitive
            TargetContentID("doc-7")
            MutableContent()
            ContentAvailable()
            Category("CAT")
            ThreadID("thread")
            Sound.critical("alarm.caf", volume: 0.75)
            Badge(0)
            Alert {
                LaunchImage("launch.png")
                Body(localizedKey: "BODY", arguments: ["b"])
                Subtitle(localizedKey: "SUB")
                Title(localizedKey: "TITLE", arguments: ["t1", "t2"])
            }
        }
        let expected =
            #"{"aps":{"alert":{"launch-image":"launch.png","title-loc-key":"TITLE","title-loc-args":["t1","t2"],"subtitle-loc-key":"SUB","loc-key":"BODY","loc-args":["b"]},"badge":0,"sound":{"critical":1,"name":"alarm.caf","volume":0.75},"thread-id":"thread","category":"CAT","content-available":1,"mutable-content":1,"target-content-id":"doc-7","interruption-level":"time-sensitive","relevance-score":0.5,"filter-criteria":"work"}}"#
        #expect(try notification.request(to: device).bodyText == expected)
    }

    @Test func contentAvailableBesideAnAlertOnceOnly() throws {
        let notification = AlertNotification(bundleID: "com.example.mail") {
            Alert {
                Title("New mail")
                Body("From Ana")
            }
            ContentAvailable()
        }
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"alert":{"title":"New mail","body":"From Ana"},"content-available":1}}"#)
        let twice = AlertNotification(bundleID: "com.example.mail") {
            Alert("x")
            ContentAvailable()
            ContentAvailable()
        }
        #expect(throws: APNsError.validation(.duplicateComponent("ContentAvailable"))) {
            try twice.request(to: device)
        }
    }

    @Test func plainTextKeysBeforeLocalizedOnes() throws {
        let notification = AlertNotification(bundleID: "com.example.app") {
            Alert {
                Title("T"); Subtitle("S"); Body("B"); LaunchImage("L")
            }
            Sound.default
        }
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B","launch-image":"L"},"sound":"default"}}"#)
    }

    @Test func builderSupportsIfIfLetSwitchAndFor() throws {
        let unread: Int? = 4
        let urgent = true
        enum Kind { case chat, mail }
        let kind = Kind.mail
        let notification = AlertNotification(bundleID: "com.example.app") {
            Alert {
                switch kind {
                case .chat: Title("Chat")
                case .mail: Title("Mail")
                }
                for line in ["only"] { Body(line) }
            }
            if let unread { Badge(unread) }
            if urgent { InterruptionLevel.timeSensitive } else { InterruptionLevel.passive }
        }
        #expect(
            try notification.request(to: device).bodyText
                == #"{"aps":{"alert":{"title":"Mail","body":"only"},"badge":4,"interruption-level":"time-sensitive"}}"#)
    }

    @Test func builderYieldsAComparableValue() {
        let one = AlertNotification(bundleID: "a") {
            Alert("x"); Badge(1)
        }
        let two = AlertNotification(bundleID: "a") {
            Badge(1); Alert("x")
        }
        #expect(one.payload == two.payload)
        #expect(one.payload.badge == 1)
        #expect(one.payload.alert == .text("x"))
    }

    @Test func headersForEveryOptionInOrder() throws {
        let id = try #require(APNsID("7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C"))
        let notification = AlertNotification(
            bundleID: "com.example.app", priority: .low,
            expiration: try .at(Date(timeIntervalSince1970: 1_900_000_000.9)),
            collapseID: "score", apnsID: id
        ) { Alert("x") }
        #expect(
            try notification.request(to: device).headers.map(\.description) == [
                "apns-push-type: alert", "apns-topic: com.example.app", "apns-priority: 1",
                "apns-expiration: 1900000000", "apns-id: 7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c",
                "apns-collapse-id: score",
            ])
        let once = AlertNotification(bundleID: "com.example.app", priority: .powerConsiderate, expiration: .immediately)
        { Alert("x") }
        let request = try once.request(to: device)
        #expect(request[header: "apns-expiration"] == "0")
        #expect(request[header: "apns-priority"] == "5")
    }

    @Test func dryRunFormat() throws {
        let request = try AlertNotification(bundleID: "com.example.app") { Alert("Hi") }.request(to: device)
        #expect(
            request.description
                == "POST /3/device/abcd\napns-push-type: alert\napns-topic: com.example.app\napns-priority: 10\n\n{\"aps\":{\"alert\":\"Hi\"}}"
        )
    }
}
