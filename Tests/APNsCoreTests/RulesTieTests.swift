import APNs
import Foundation
import Testing

/// Each push type's struct agrees with its rules entry (`<Type>+Rules.swift`): the priorities its
/// `Priority` type can express are exactly the allowed ones, its default is the rules' default,
/// and its deliverable conformances are exactly the authentications the rules allow.
@Suite struct RulesTieTests {
    struct Empty: Encodable, Sendable {}

    static func conformances<N: PushNotification>(_ type: N.Type) -> Set<AuthenticationMethod> {
        var methods: Set<AuthenticationMethod> = []
        if type is any TokenDeliverable.Type { methods.insert(.token) }
        if type is any CertificateDeliverable.Type { methods.insert(.certificate) }
        return methods
    }

    static func check<N: PushNotification>(
        _ type: N.Type, expressible: [PushPriority], byDefault: N, broadcastable: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let rules = N.pushType
        #expect(Set(expressible) == rules.allowedPriorities, "\(rules) priorities", sourceLocation: sourceLocation)
        #expect(
            byDefault.pushPriority == rules.defaultPriority, "\(rules) default priority", sourceLocation: sourceLocation
        )
        #expect(conformances(type) == rules.authentication, "\(rules) authentication", sourceLocation: sourceLocation)
        #expect(
            (type is any BroadcastDeliverable.Type) == broadcastable, "\(rules) broadcast",
            sourceLocation: sourceLocation)
        if let required = rules.requiredExpiration {
            #expect(
                byDefault.expiration?.unixSeconds == required, "\(rules) expiration", sourceLocation: sourceLocation)
        }
    }

    @Test func everyStructMatchesItsRules() {
        let standard = StandardPriority.allCases.map(\.pushPriority)
        let now = Date(timeIntervalSince1970: 1)
        Self.check(
            AlertNotification<NoAppData>.self,
            expressible: AlertNotification<NoAppData>.Priority.allCases.map(\.pushPriority),
            byDefault: AlertNotification(bundleID: "a.b") { Alert("x") })
        Self.check(
            BackgroundNotification<NoAppData>.self, expressible: [BackgroundNotification(bundleID: "a.b").pushPriority],
            byDefault: BackgroundNotification(bundleID: "a.b"))
        Self.check(
            ComplicationNotification<Empty>.self, expressible: standard,
            byDefault: ComplicationNotification(bundleID: "a.b", appData: Empty()))
        Self.check(ControlsNotification.self, expressible: standard, byDefault: ControlsNotification(bundleID: "a.b"))
        Self.check(
            FileProviderNotification.self, expressible: standard,
            byDefault: FileProviderNotification(bundleID: "a.b", containerIdentifier: "c", domain: "d"))
        Self.check(LocationNotification.self, expressible: standard, byDefault: LocationNotification(bundleID: "a.b"))
        Self.check(
            MDMNotification.self, expressible: standard,
            byDefault: MDMNotification(topic: "com.apple.mgmt.x", pushMagic: "m"))
        Self.check(
            PushToTalkNotification<Empty>.self,
            expressible: [PushToTalkNotification(bundleID: "a.b", appData: Empty()).pushPriority],
            byDefault: PushToTalkNotification(bundleID: "a.b", appData: Empty()))
        Self.check(
            VoIPNotification<Empty>.self, expressible: standard,
            byDefault: VoIPNotification(bundleID: "a.b", appData: Empty()))
        Self.check(WidgetNotification.self, expressible: standard, byDefault: WidgetNotification(bundleID: "a.b"))
        Self.check(
            AccessoryNotification.self, expressible: standard,
            byDefault: AccessoryNotification(
                bundleID: "a.b", encryptedData: "AA==", sessionIdentifier: "s", keyID: "AA==", messageIndex: 0))
        Self.check(
            LiveActivityNotification<Empty, NoAttributes, LiveActivityEvent.Update>.self, expressible: standard,
            byDefault: LiveActivityNotification(bundleID: "a.b", update: Empty(), timestamp: now), broadcastable: true)
        Self.check(
            LiveActivityNotification<Empty, NoAttributes, LiveActivityEvent.End>.self, expressible: standard,
            byDefault: LiveActivityNotification(bundleID: "a.b", end: Empty(), timestamp: now), broadcastable: true)
        Self.check(
            LiveActivityNotification<Empty, Empty, LiveActivityEvent.Start>.self, expressible: standard,
            byDefault: LiveActivityNotification(
                bundleID: "a.b", start: Empty(), attributes: Empty(), alert: LiveActivityAlert(title: "t", body: "b"),
                timestamp: now))
        // Only types the rules say may be broadcast carry a broadcast limit.
        #expect(PushType.allCases.filter { $0.maximumBroadcastPayloadSize != nil } == [.liveactivity])
    }

    @Test func nestedRawJSONIsWrittenAsJSON() throws {
        struct Envelope: Encodable, Sendable { var kind = "game"; var detail: RawJSONObject }
        let notification = AlertNotification(
            bundleID: "a.b", appData: Envelope(detail: try RawJSONObject(#"{ "round": 2, "names": ["é", "😀"] }"#))
        ) { Alert("x") }
        #expect(
            try notification.request(to: Device(token: "00aa")).bodyText
                == #"{"aps":{"alert":"x"},"kind":"game","detail":{"round":2,"names":["é","😀"]}}"#)
        let start = LiveActivityNotification(
            bundleID: "a.b", start: try RawJSONObject(#"{"score":1}"#),
            attributes: Envelope(detail: try RawJSONObject("{}")),
            alert: LiveActivityAlert(title: "t", body: "b"), timestamp: Date(timeIntervalSince1970: 5))
        #expect(
            try start.request(to: Device(token: "00aa")).bodyText
                == #"{"aps":{"alert":{"title":"t","body":"b"},"content-state":{"score":1},"timestamp":5,"event":"start","attributes-type":"Envelope","attributes":{"kind":"game","detail":{}}}}"#
        )
    }
}

/// App data strategies: exact bytes, and what a `JSONDecoder` with the same strategies reads back.
@Suite struct AppDataEncodingTests {
    struct Order: Codable, Sendable, Equatable {
        var orderID: String
        var placedAt: Date
        var receiptPDF: Data
        var lineItems: [Item]
        struct Item: Codable, Sendable, Equatable { var unitPrice: Int }
    }
    static let order = Order(
        orderID: "A1", placedAt: Date(timeIntervalSince1970: 1_700_000_000.5), receiptPDF: Data([1, 2, 255]),
        lineItems: [.init(unitPrice: 3)])

    static func body(_ encoding: AppDataEncoding) throws -> String {
        var notification = AlertNotification(bundleID: "a.b", appData: order) { Alert("x") }
        notification.appDataEncoding = encoding
        return try notification.request(to: Device(token: "00aa")).bodyText
    }

    static func decoded(
        _ body: String, dates: JSONDecoder.DateDecodingStrategy, data: JSONDecoder.DataDecodingStrategy, snake: Bool
    ) throws -> Order {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = dates
        decoder.dataDecodingStrategy = data
        if snake { decoder.keyDecodingStrategy = .convertFromSnakeCase }
        return try decoder.decode(Order.self, from: Data(body.utf8))
    }

    @Test func defaultIsJSONEncoderDefaults() throws {
        let body = try Self.body(.default)
        #expect(
            body
                == #"{"aps":{"alert":"x"},"orderID":"A1","placedAt":721692800.5,"receiptPDF":"AQL/","lineItems":[{"unitPrice":3}]}"#
        )
        #expect(try Self.decoded(body, dates: .deferredToDate, data: .base64, snake: false) == Self.order)
    }

    @Test func everyStrategyRoundTrips() throws {
        let snake = try Self.body(AppDataEncoding(dates: .secondsSince1970, keys: .convertToSnakeCase))
        #expect(
            snake
                == #"{"aps":{"alert":"x"},"order_id":"A1","placed_at":1700000000.5,"receipt_pdf":"AQL/","line_items":[{"unit_price":3}]}"#
        )
        // (No round trip here: Foundation's convertFromSnakeCase reads order_id as orderId, not orderID.)

        let millis = try Self.body(AppDataEncoding(dates: .millisecondsSince1970, data: .deferredToData))
        #expect(
            millis
                == #"{"aps":{"alert":"x"},"orderID":"A1","placedAt":1700000000500,"receiptPDF":[1,2,255],"lineItems":[{"unitPrice":3}]}"#
        )
        #expect(
            try Self.decoded(millis, dates: .millisecondsSince1970, data: .deferredToData, snake: false) == Self.order)

        let iso = try Self.body(AppDataEncoding(dates: .iso8601))
        #expect(iso.contains(#""placedAt":"2023-11-14T22:13:20Z""#))
        var whole = Self.order
        whole.placedAt = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(try Self.decoded(iso, dates: .iso8601, data: .base64, snake: false) == whole)
    }

    @Test func snakeCaseMatchesFoundation() throws {
        for key in [
            "orderID", "placedAt", "receiptPDF", "lineItems", "_leading", "trailing_", "URLValue", "simple", "a1B2",
            "HTMLToText", "x", "aB", "ABC", "already_snake", "été",
        ] {
            struct One: Encodable {
                var key: String;
                func encode(to encoder: Encoder) throws {
                    var container = encoder.container(keyedBy: AnyKey.self);
                    try container.encode(1, forKey: AnyKey(stringValue: key))
                }
            }
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            let foundation = String(decoding: try encoder.encode(One(key: key)), as: UTF8.self)
            var notification = BackgroundNotification(bundleID: "a.b", appData: One(key: key))
            notification.appDataEncoding = AppDataEncoding(keys: .convertToSnakeCase)
            #expect(
                try notification.request(to: Device(token: "00aa")).bodyText == #"{"aps":{"content-available":1},"#
                    + foundation.dropFirst(), "\(key)")
        }
    }

    @Test func liveActivityContentEncoding() throws {
        struct Score: Encodable, Sendable { var homeTeam: Int; var updatedAt: Date }
        var update = LiveActivityNotification(
            bundleID: "a.b", update: Score(homeTeam: 1, updatedAt: Date(timeIntervalSince1970: 10)),
            timestamp: Date(timeIntervalSince1970: 20))
        #expect(
            try update.request(to: Device(token: "00aa")).bodyText
                == #"{"aps":{"content-state":{"homeTeam":1,"updatedAt":-978307190},"timestamp":20,"event":"update"}}"#)
        update.contentEncoding = AppDataEncoding(dates: .secondsSince1970, keys: .convertToSnakeCase)
        #expect(
            try update.request(to: Device(token: "00aa")).bodyText
                == #"{"aps":{"content-state":{"home_team":1,"updated_at":10},"timestamp":20,"event":"update"}}"#)
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
