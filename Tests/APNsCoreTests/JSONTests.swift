import APNs
import Foundation
import Testing

@Suite struct JSONTests {
    let device = try! Device(token: "abcd")

    func body<A: Encodable & Sendable>(_ appData: A) throws -> String {
        try AlertNotification(bundleID: "com.example.app", appData: appData) { Alert("x") }.request(to: device).bodyText
    }

    @Test func stringEscapingFollowsRFC8259() throws {
        let notification = AlertNotification(bundleID: "com.example.app") {
            Alert("q\" b\\ n\n t\t nul\u{0} us\u{1F} / é 😀 \u{7F}")
        }
        #expect(
            try notification.request(to: device).bodyText
                == "{\"aps\":{\"alert\":\"q\\\" b\\\\ n\\u000a t\\u0009 nul\\u0000 us\\u001f / é 😀 \u{7F}\"}}")
    }

    struct Mixed: Encodable, Sendable {
        var zeta = 1
        var alpha = 0.1
        var whole = 3.0
        var tiny = 1e-7
        var huge = 1e20
        var negativeZero = -0.0
        var float: Float = 0.1
        var big = UInt64.max
        var small = Int8.min
        var flag = true
        var missing: String? = nil
        var list = [1, 2]
        var nested = ["b": 2, "a": 1]
    }

    @Test func numbersAndOrderMatchJSONEncoderDefaultsExceptKeyOrder() throws {
        #expect(
            try body(Mixed())
                == #"{"aps":{"alert":"x"},"zeta":1,"alpha":0.1,"whole":3,"tiny":1e-07,"huge":1e+20,"negativeZero":-0,"float":0.1,"big":18446744073709551615,"small":-128,"flag":true,"list":[1,2],"nested":{"a":1,"b":2}}"#
        )
    }

    struct Foundationy: Encodable, Sendable {
        var date = Date(timeIntervalSinceReferenceDate: 1.5)
        var data = Data([1, 2, 3])
        var url = URL(string: "https://example.com/a?b=1")!
        var decimal = Decimal(string: "12.50")!
        var uuid = UUID(uuidString: "7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C")!
    }

    @Test func foundationTypesUseJSONEncoderDefaultStrategies() throws {
        // The same values through JSONEncoder, compared value by value (its key order is not stable).
        let ours = try body(Foundationy())
        #expect(
            ours
                == #"{"aps":{"alert":"x"},"date":1.5,"data":"AQID","url":"https://example.com/a?b=1","decimal":12.5,"uuid":"7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C"}"#
        )
        struct Decoded: Decodable, Equatable {
            var date: Double; var data: String; var url: String; var decimal: Double; var uuid: String
        }
        let reference = try JSONDecoder().decode(Decoded.self, from: JSONEncoder().encode(Foundationy()))
        #expect(try JSONDecoder().decode(Decoded.self, from: Data(ours.utf8)) == reference)
    }

    @Test func explicitNilAndNestedContainers() throws {
        struct Custom: Encodable, Sendable {
            enum Keys: String, CodingKey { case a, b, c }
            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encodeNil(forKey: .a)
                var list = container.nestedUnkeyedContainer(forKey: .b)
                try list.encode("x")
                var inner = list.nestedContainer(keyedBy: Keys.self)
                try inner.encode(1, forKey: .c)
                try container.encode(true, forKey: .c)
            }
        }
        #expect(try body(Custom()) == #"{"aps":{"alert":"x"},"a":null,"b":["x",{"c":1}],"c":true}"#)
    }

    @Test func nonFiniteNumbersAreTypedErrors() {
        struct Bad: Encodable, Sendable {
            var inner = Inner(); struct Inner: Encodable, Sendable { var value = Double.nan }
        }
        #expect(throws: APNsError.validation(.nonFiniteNumber(path: "inner.value"))) { try body(Bad()) }
        #expect(throws: APNsError.validation(.nonFiniteNumber(path: "aps.relevance-score"))) {
            try AlertNotification(bundleID: "a") {
                Alert("x"); RelevanceScore(.infinity)
            }.request(to: device)
        }
    }

    @Test func appDataMayNotWriteAPS() {
        struct Sneaky: Encodable, Sendable { var aps = "nope" }
        #expect(throws: APNsError.validation(.reservedAppDataKey("aps"))) { try body(Sneaky()) }
    }

    @Test func appDataMustBeAnObject() {
        #expect(throws: APNsError.validation(.appDataNotAnObject)) { try body([1, 2, 3]) }
        #expect(throws: APNsError.validation(.appDataNotAnObject)) { try body("text") }
    }
}

@Suite struct RawJSONObjectTests {
    @Test func keepsOrderAndDropsWhitespace() throws {
        let data = try RawJSONObject(" { \"z\" : 1 ,\n \"a\" : \"x y\\\" }\" , \"n\": {\"k\": [1, 2]} } ")
        let body = try AlertNotification(bundleID: "a", appData: data) { Alert("x") }.request(to: Device(token: "ab"))
            .bodyText
        #expect(body == #"{"aps":{"alert":"x"},"z":1,"a":"x y\" }","n":{"k":[1,2]}}"#)
        let empty = try BackgroundNotification(bundleID: "a", appData: RawJSONObject("{}")).request(
            to: Device(token: "ab")
        ).bodyText
        #expect(empty == #"{"aps":{"content-available":1}}"#)
    }

    @Test func rejectsNonObjectsAndAPS() {
        #expect(throws: APNsError.validation(.appDataNotAnObject)) { try RawJSONObject("[1]") }
        #expect(throws: APNsError.validation(.appDataNotAnObject)) { try RawJSONObject("{nope") }
        #expect(throws: APNsError.validation(.reservedAppDataKey("aps"))) { try RawJSONObject(#"{"aps":{}}"#) }
    }
}

/// The streaming fast path and the tree encoder must write the same bytes; unusual container use
/// falls back to the tree.
@Suite struct StreamingEncoderTests {
    let device = try! Device(token: "ab")

    struct Inner: Encodable, Sendable {
        var a = 1; var list = [1.5, 2]; var flag: Bool? = nil; var when = Date(timeIntervalSinceReferenceDate: 2)
    }
    struct Outer: Encodable, Sendable {
        var name = "x\"y"
        var inner = Inner()
        var inners = [Inner(), Inner()]
        var data = Data([255])
        var url = URL(string: "https://a.b/c")!
        var big = UInt64.max
        var small = Int8(-3)
        var float: Float = 0.25
        var optional: String? = "present"
        var empty = NoAppData()
    }

    @Test func sameBytesAsTheTreeEncoder() throws {
        let body = try AlertNotification(bundleID: "a", appData: Outer()) { Alert("x") }.request(to: device).bodyText
        let inner = #"{"a":1,"list":[1.5,2],"when":2}"#
        #expect(
            body == #"{"aps":{"alert":"x"},"name":"x\"y","inner":"# + inner + #","inners":["# + inner + "," + inner
                + #"],"data":"/w==","url":"https://a.b/c","big":18446744073709551615,"small":-3,"float":0.25,"optional":"present","empty":{}}"#
        )
    }

    struct TwiceKeyed: Encodable, Sendable {
        enum Keys: String, CodingKey { case a, b }
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(1, forKey: .a)
            try container.encode(2, forKey: .b)
            try container.encode(3, forKey: .a)  // last write wins, first place kept
        }
    }

    struct SuperUser: Encodable, Sendable {
        enum Keys: String, CodingKey { case own }
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode("mine", forKey: .own)
            try NoAppData().encode(to: container.superEncoder())
        }
    }

    @Test func unusualContainerUseFallsBackToTheTree() throws {
        #expect(
            try AlertNotification(bundleID: "a", appData: TwiceKeyed()) { Alert("x") }.request(to: device).bodyText
                == #"{"aps":{"alert":"x"},"a":3,"b":2}"#)
        #expect(
            try AlertNotification(bundleID: "a", appData: SuperUser()) { Alert("x") }.request(to: device).bodyText
                == #"{"aps":{"alert":"x"},"own":"mine","super":{}}"#)
        struct WithDictionary: Encodable, Sendable { var first = 1; var map = ["z": 1, "a": 2] }
        #expect(
            try AlertNotification(bundleID: "a", appData: WithDictionary()) { Alert("x") }.request(to: device).bodyText
                == #"{"aps":{"alert":"x"},"first":1,"map":{"a":2,"z":1}}"#)
        struct Deep: Encodable, Sendable { var inner = Inner(); var bad = Double.infinity }
        #expect(throws: APNsError.validation(.nonFiniteNumber(path: "bad"))) {
            try AlertNotification(bundleID: "a", appData: Deep()) { Alert("x") }.request(to: device)
        }
    }
}

@Suite struct JSONWriterTests {
    func text(_ writer: JSONWriter) -> String { String(decoding: writer.bytes, as: UTF8.self) }

    @Test func growsPastItsInitialCapacity() {
        var writer = JSONWriter(capacity: 0)
        let long = String(repeating: "é\"x", count: 5_000)
        writer.beginObject()
        for index in 0..<300 { writer.key("k\(index)"); writer.int(index) }
        writer.key("long")
        writer.string(long)
        writer.endObject()
        let expected =
            "{" + (0..<300).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
            + ",\"long\":\"" + String(repeating: "é\\\"x", count: 5_000) + "\"}"
        #expect(text(writer) == expected)
        #expect(writer.count == expected.utf8.count)
    }

    @Test func copiesAreIndependent() {
        var original = JSONWriter(capacity: 4)
        original.beginObject()
        var copy = original
        copy.key("copy")
        copy.int(1)
        copy.endObject()
        original.key("original")
        original.bool(false)
        original.endObject()
        #expect(text(original) == #"{"original":false}"#)
        #expect(text(copy) == #"{"copy":1}"#)
    }

    @Test func integerExtremes() {
        var writer = JSONWriter()
        writer.beginArray()
        for value in [Int64.min, Int64.max, 0, -1, 10, -1_000_000] { writer.int(value) }
        writer.int(UInt64.max)
        writer.endArray()
        #expect(text(writer) == "[-9223372036854775808,9223372036854775807,0,-1,10,-1000000,18446744073709551615]")
    }
}
