import APNs
import Foundation
import Testing

@Suite struct ValidationTests {
    let device = try! Device(token: "abcd")

    @Test func payloadLimitNamesTheSizeAndLimit() throws {
        let fits = AlertNotification(bundleID: "com.example.app") { Alert(String(repeating: "a", count: 4096 - 20)) }
        #expect(try fits.payload().count == 4096)
        let tooBig = AlertNotification(bundleID: "com.example.app") { Alert(String(repeating: "a", count: 4096 - 19)) }
        #expect(throws: APNsError.validation(.payloadTooLarge(pushType: .alert, size: 4097, limit: 4096))) {
            try tooBig.request(to: device)
        }
        let error = APNsValidationError.payloadTooLarge(pushType: .alert, size: 4097, limit: 4096)
        #expect(error.description.contains("4097 bytes") && error.description.contains("at most 4096"))
        #expect(PushType.voip.maximumPayloadSize == 5120)
    }

    @Test func collapseIDLimit() throws {
        let ok = AlertNotification(bundleID: "a", collapseID: CollapseID(String(repeating: "é", count: 32))) {
            Alert("x")
        }
        #expect(try ok.request(to: device)[header: "apns-collapse-id"]?.utf8.count == 64)
        let long = AlertNotification(bundleID: "a", collapseID: CollapseID(String(repeating: "é", count: 32) + "x")) {
            Alert("x")
        }
        #expect(throws: APNsError.validation(.collapseIDTooLong(bytes: 65, limit: 64))) { try long.request(to: device) }
        let injected = AlertNotification(bundleID: "a", collapseID: "a\r\nx-evil: 1") { Alert("x") }
        #expect(throws: APNsError.validation(.controlCharacterInHeader(header: "apns-collapse-id"))) {
            try injected.request(to: device)
        }
        #expect(throws: APNsError.validation(.emptyCollapseID)) {
            try AlertNotification(bundleID: "a", collapseID: "") { Alert("x") }.request(to: device)
        }
    }

    @Test func deviceTokens() throws {
        #expect(try Device(token: "ABCDEF0123").token == "abcdef0123")
        #expect(try Device(token: "0123456789abcdef").token == "0123456789abcdef")
        let nines = String(repeating: "9", count: 60)
        #expect(try Device(token: "aBcD" + nines).token == "abcd" + nines)
        #expect(try Device(token: String("xx00FFxx".dropFirst(2).dropLast(2))).token == "00ff")
        #expect(try Device(tokenBytes: [0x00, 0xFF, 0x10]).token == "00ff10")
        // Contiguous bytes are read through one buffer; any other collection through a copy.
        #expect(try Device(tokenBytes: [UInt8](repeating: 0xAB, count: 32)[4..<8]).token == "abababab")
        #expect(try Device(tokenBytes: (0..<4).lazy.map { UInt8($0 * 17) }).token == "00112233")
        // The same type as send throws, so one do/catch matches both by case.
        func problem(_ token: String) -> String? {
            do {
                _ = try Device(token: token)
                return nil
            } catch .validation(.invalidDeviceToken(let reason)) {
                return reason
            } catch {
                return "unexpected \(error)"
            }
        }
        #expect(problem("") == "the token is empty")
        #expect(
            problem("abc")
                == "the token has 3 hex digits, and a token's bytes make an even number: part of it is missing; pass the whole token the app reported"
        )
        // Not hex is said before an odd length: "xyz" has three digits of nothing.
        let notHex =
            "is not a hex digit: a device token is hex (0-9, a-f), as the app reported it, not a bundle id, user id or a base64 string"
        #expect(problem("xyz") == "character 1 " + notHex)
        #expect(problem("zz") == "character 1 " + notHex)
        #expect(problem("ab\u{E9}00") == "character 3 " + notHex)
        #expect(
            try APNsError.validation(.invalidDeviceToken(#require(problem("abcg")))).description
                == "Invalid device token: character 4 \(notHex)."
        )
        // NSData's old description, a 0x prefix and a trailing newline each say what to do.
        #expect(
            problem("<00fc13ad ff785122 b4ad2880 9a342098 23412414 21348097 878e577c 991de8f0>")?.hasPrefix(
                "this is the description of the token's Data") == true)
        #expect(problem("0x00fc13ad") == "the token starts with \"0x\": pass the hex digits alone")
        #expect(
            problem("00fc13ad\n")
                == "the token has white space around it: trim it (a line read from a file keeps its newline)")
        // The length is judged before the digits: a long value that is no token says so.
        #expect(
            problem(String(repeating: "z", count: 514))
                == "the token has 514 hex digits; at most 512 are accepted (256 bytes): pass the token the app registered, not another value"
        )
        #expect(throws: APNsError.validation(.invalidDeviceToken("the token is empty"))) { try Device(tokenBytes: []) }
    }

    @Test func rulesTypesCannotExpress() {
        #expect(throws: APNsError.validation(.mutableContentWithoutAlertText)) {
            try AlertNotification(bundleID: "a") {
                MutableContent(); Badge(1)
            }.request(to: device)
        }
        #expect(throws: APNsError.validation(.mutableContentWithoutAlertText)) {
            try AlertNotification(bundleID: "a") {
                MutableContent(); Alert { LaunchImage("x") }
            }.request(to: device)
        }
        #expect(throws: APNsError.validation(.relevanceScoreOutOfRange(1.5))) {
            try AlertNotification(bundleID: "a") {
                Alert("x"); RelevanceScore(1.5)
            }.request(to: device)
        }
        #expect(throws: APNsError.validation(.negativeBadge(-1))) {
            try AlertNotification(bundleID: "a") { Badge(-1) }.request(to: device)
        }
        #expect(throws: APNsError.validation(.criticalVolumeOutOfRange(2))) {
            try AlertNotification(bundleID: "a") {
                Alert("x"); Sound.critical(volume: 2)
            }.request(to: device)
        }
        #expect(throws: APNsError.validation(.duplicateComponent("Badge"))) {
            try AlertNotification(bundleID: "a") {
                Badge(1); Badge(2)
            }.request(to: device)
        }
        #expect(throws: APNsError.validation(.duplicateComponent("Title"))) {
            try AlertNotification(bundleID: "a") {
                Alert {
                    Title("a"); Title(localizedKey: "b")
                }
            }.request(to: device)
        }
        #expect(throws: APNsError.validation(.emptyAlert)) {
            try AlertNotification(bundleID: "a") { Alert {} }.request(to: device)
        }
        #expect(throws: APNsError.validation(.invalidTopic("com.example app"))) {
            try AlertNotification(bundleID: "com.example app") { Alert("x") }.request(to: device)
        }
        #expect(throws: APNsError.validation(.invalidTopic(""))) {
            try BackgroundNotification(bundleID: "").request(to: device)
        }
    }

    @Test func apnsIDAndExpiration() throws {
        #expect(APNsID("not-a-uuid") == nil)
        #expect(APNsID("7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c")?.description == "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c")
        #expect(throws: APNsError.validation(.invalidExpiration(-5))) { try Expiration(unixSeconds: -5) }
        #expect(try Expiration.at(Date(timeIntervalSince1970: 10.99)).unixSeconds == 10)
        // A date before 1970 is an error, as a negative number is (it used to clamp to 0).
        #expect(throws: APNsError.validation(.invalidDate(key: "apns-expiration"))) {
            try Expiration.at(Date(timeIntervalSince1970: -1))
        }
    }

    @Test func everyPushTypeHasItsRules() {
        #expect(
            PushType.allCases.map(\.rawValue) == [
                "accessory", "alert", "background", "complication", "controls", "fileprovider", "liveactivity",
                "location", "mdm", "pushtotalk", "voip", "widgets",
            ])
        #expect(PushType.background.allowedPriorities == [.powerConsiderate])
        #expect(PushType.pushtotalk.requiredExpiration == 0)
        #expect(PushType.widgets.topic(forBundleID: "com.a") == "com.a.push-type.widgets")
        #expect(PushType.mdm.authentication == [.certificate])
        #expect(PushType(rawValue: "widget") == nil)
    }

    /// A priority read as a number (CLI, gateway) is checked by the push type and mapped onto the
    /// typed notification's own priority; the error names what the push type takes.
    @Test func numericPrioritiesAreCheckedByThePushType() throws {
        #expect(try PushType.alert.priority(1) == .low)
        #expect(try PushType.widgets.priority(5) == .powerConsiderate)
        #expect(try PushType.pushtotalk.priority(10) == .immediate)
        #expect(throws: APNsError.validation(.priorityNotAllowed(pushType: .widgets, priority: "1"))) {
            try PushType.widgets.priority(1)
        }
        #expect(throws: APNsError.validation(.priorityNotAllowed(pushType: .alert, priority: "7"))) {
            try PushType.alert.priority(7)
        }
        #expect(
            APNsValidationError.priorityNotAllowed(pushType: .background, priority: "10").description
                == "Priority 10 is not allowed for background pushes: it is always 5.")
        #expect(
            APNsValidationError.priorityNotAllowed(pushType: .widgets, priority: "1").description
                == "Priority 1 is not allowed for widgets pushes: use 10 or 5.")
        #expect(
            APNsValidationError.priorityNotAllowed(pushType: .alert, priority: "7").description
                == "Priority 7 is not allowed for alert pushes: use 10, 5 or 1.")
        #expect(StandardPriority(.powerConsiderate) == .powerConsiderate)
        #expect(StandardPriority(.immediate) == .immediate)
        #expect(StandardPriority(.low) == nil)
        #expect(AlertNotification<NoAppData>.Priority(.low) == .low)
        #expect(AlertNotification<NoAppData>.Priority(.powerConsiderate) == .powerConsiderate)
        #expect(AlertNotification<NoAppData>.Priority(.immediate) == .immediate)
    }
}

@Suite struct APNsIDParsingTests {
    @Test func parsesCanonicalFormsOnly() {
        let id = APNsID("7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C")
        #expect(id?.uuid == UUID(uuidString: "7F3C9A2B-1D4E-4F5A-8B6C-9D0E1F2A3B4C"))
        #expect(APNsID("7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c") == id)
        // The last digit replaced by the characters either side of each digit range.
        let edges = [":", "@", "`", "G", "/", "{", " "].map { "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4" + $0 }
        for bad in [
            "", "7f3c9a2b1d4e4f5a8b6c9d0e1f2a3b4c", "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4",
            "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4g",
            "7f3c9a2b_1d4e-4f5a-8b6c-9d0e1f2a3b4c", "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4cc",
            "7f3c9a2b-1d4e-4f5a-8b6c-9d0e-f2a3b4c",
        ] + edges {
            #expect(APNsID(bad) == nil, "\(bad)")
        }
    }

    @Test func writesTheLowercaseCanonicalForm() {
        for text in [
            "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c", "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff", "01234567-89ab-cdef-fedc-ba9876543210",
        ] {
            #expect(APNsID(text.uppercased())?.description == text)
            #expect(APNsID(text)?.description == UUID(uuidString: text)?.uuidString.lowercased())
        }
    }

    @Test func makesDistinctVersion4IDs() {
        let ids = (0..<1_000).map { _ in APNsID() }
        #expect(Set(ids).count == 1_000)
        for id in ids {
            let text = id.description
            // xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx, and it reads back as itself.
            #expect(Array(text)[14] == "4", "\(text)")
            #expect("89ab".contains(Array(text)[19]), "\(text)")
            #expect(APNsID(text) == id)
            #expect(text == id.uuid.uuidString.lowercased())
        }
        // Every other bit varies: each of the 122 is 1 in some id and 0 in another.
        var ones = [UInt8](repeating: 0, count: 16), zeros = [UInt8](repeating: 0, count: 16)
        for id in ids {
            withUnsafeBytes(of: id.uuid.uuid) { bytes in
                for index in 0..<16 {
                    ones[index] |= bytes[index]
                    zeros[index] |= ~bytes[index]
                }
            }
        }
        let fixedOnes: [Int: UInt8] = [6: 0x40, 8: 0x80], fixedZeros: [Int: UInt8] = [6: 0xB0, 8: 0x40]
        for index in 0..<16 {
            #expect(ones[index] == 0xFF & ~(fixedZeros[index] ?? 0), "byte \(index)")
            #expect(zeros[index] == 0xFF & ~(fixedOnes[index] ?? 0), "byte \(index)")
        }
    }
}
