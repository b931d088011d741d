import APNs
import Foundation
import Testing

/// Opt-in truncation of alert (and other) text at the exact byte boundary, with multi-byte text,
/// emoji and JSON escapes. Sizes are the push types' limits: 4096 for alerts, 5120 for VoIP.
@Suite struct TruncationTests {
    let device = try! Device(token: "abcd")
    /// `{"aps":{"alert":{"body":""}}}`: what a body-only alert costs besides its text.
    static let bodyOverhead = 29

    func bodyAlert(_ body: String) -> AlertNotification<NoAppData> {
        AlertNotification(bundleID: "com.example.app") { Alert { Body(body) } }
    }

    func payloadText(_ body: String) -> String { #"{"aps":{"alert":{"body":""# + body + #""}}}"# }

    @Test func exactly4096BytesIsSentUnchanged() throws {
        let body = String(repeating: "😀", count: 1016) + "日"  // 4064 + 3 bytes
        let notification = bodyAlert(body)
        #expect(try notification.payload().count == 4096)
        let fitted = try notification.truncatedToFit()
        #expect(!fitted.wasTruncated && fitted.cuts.isEmpty)
        #expect(fitted.originalSize == 4096 && fitted.size == 4096 && fitted.limit == 4096)
        #expect(try fitted.notification.request(to: device).body == Array(payloadText(body).utf8))
    }

    @Test func bytes4097AreAnErrorWithoutTruncationAndFitWithIt() throws {
        let body = String(repeating: "😀", count: 1016) + "éé"  // 4064 + 4 bytes: 4097 in all
        let notification = bodyAlert(body)
        #expect(throws: APNsError.validation(.payloadTooLarge(pushType: .alert, size: 4097, limit: 4096))) {
            try notification.request(to: device)
        }
        let fitted = try notification.truncatedToFit()
        // One byte over: both é go (the first alone would leave no room for the ellipsis), and the
        // emoji are kept whole.
        let expected = String(repeating: "😀", count: 1016) + "…"
        #expect(try fitted.notification.request(to: device).body == Array(payloadText(expected).utf8))
        #expect(fitted.size == 4096 && fitted.originalSize == 4097)
        #expect(fitted.cuts == [TextCut(field: "body", text: expected, removedCharacters: 2, removedBytes: 1)])
        #expect(fitted.cuts.map(\.description) == ["body: removed 2 characters (1 bytes)"])
    }

    @Test func emojiAreCutBetweenGraphemeClustersOnly() throws {
        let family = "👩‍👩‍👧‍👦"  // one character, 25 bytes: four emoji joined by three ZWJ
        #expect(family.count == 1 && family.utf8.count == 25)
        let fitted = try bodyAlert(String(repeating: family, count: 163)).truncatedToFit()  // 4075 + 29 = 4104
        let expected = String(repeating: family, count: 162) + "…"
        #expect(try fitted.notification.payload() == Array(payloadText(expected).utf8))
        #expect(fitted.size == 4082)
        #expect(fitted.cuts.first?.removedCharacters == 1)
    }

    @Test func escapesAreKeptWholeOrDropped() throws {
        // `"` is sent as \" (2 bytes), a newline as \u000a (6): the cut lands between them.
        let body = String(repeating: "x", count: 4062) + "\"" + "\n"  // 4062 + 2 + 6 = 4070
        let fitted = try bodyAlert(body).truncatedToFit()
        let sent = String(repeating: "x", count: 4062) + #"\""# + "…"
        #expect(try fitted.notification.payload() == Array(payloadText(sent).utf8))
        #expect(fitted.size == 4096)
        // Whitespace before the ellipsis is dropped.
        // (Over the limit, a body-only alert keeps 4096 - 29 - 3 = 4064 bytes of text: here 4062
        // y and two spaces.)
        let spaced = try bodyAlert(String(repeating: "y", count: 4062) + "  " + "zzzz").truncatedToFit()
        #expect(try spaced.notification.payload() == Array(payloadText(String(repeating: "y", count: 4062) + "…").utf8))
        #expect(spaced.cuts.first?.removedCharacters == 6)
    }

    @Test func bodyThenSubtitleThenTitle() throws {
        let title = String(repeating: "T", count: 1500)
        let subtitle = String(repeating: "é", count: 1500)  // 3000 bytes
        let notification = AlertNotification(bundleID: "com.example.app") {
            Alert {
                Title(title); Subtitle(subtitle); Body("A short body")
            }
            Badge(1)
        }
        let original = try notification.truncatedToFit().originalSize
        #expect(original == 26 + 1500 + 14 + 3000 + 10 + 12 + 14)  // 4576: 480 over
        let fitted = try notification.truncatedToFit()
        // The body goes first (to the ellipsis alone: 9 bytes freed), then the subtitle gives the
        // other 471 (keeping 3000 - 471 - 3 bytes = 1263 é); the title is untouched.
        #expect(fitted.cuts.map(\.field) == ["body", "subtitle"])
        #expect(fitted.cuts[0].text == "…")
        let keptSubtitle = String(repeating: "é", count: 1263) + "…"
        #expect(
            fitted.cuts[1] == TextCut(field: "subtitle", text: keptSubtitle, removedCharacters: 237, removedBytes: 471))
        #expect(
            try fitted.notification.payload()
                == Array(
                    (#"{"aps":{"alert":{"title":""# + title + #"","subtitle":""# + keptSubtitle
                        + #"","body":"…"},"badge":1}}"#).utf8))
        #expect(fitted.size == 4096)
    }

    @Test func plainStringAlertAndLocalizedText() throws {
        let fitted = try AlertNotification(bundleID: "com.example.app") { Alert(String(repeating: "ß", count: 2100)) }
            .truncatedToFit()
        #expect(fitted.cuts.map(\.field) == ["alert"])
        #expect(fitted.size <= 4096)
        // 20 bytes around 4200 of text: 124 over, so 4200 - 124 - 3 = 4073 bytes may stay: 2036 ß.
        #expect(
            try fitted.notification.payload()
                == Array((#"{"aps":{"alert":""# + String(repeating: "ß", count: 2036) + #"…"}}"#).utf8))
        // Localized text is not cut: what is left is too large, and the error says what was tried.
        let localized = AlertNotification(bundleID: "com.example.app") {
            Alert { Body(localizedKey: "K", arguments: [String(repeating: "a", count: 5000)]) }
        }
        #expect(
            throws: APNsError.validation(
                .payloadTooLargeAfterTruncation(
                    pushType: .alert, size: 49 + 5000, limit: 4096, fields: ["alert", "body", "subtitle", "title"]))
        ) {
            try localized.truncatedToFit()
        }
    }

    struct Call: Encodable, Sendable {
        var callerName: String
        var callID: String
    }

    @Test func voipAppDataAt5120() throws {
        // {"callerName":"","callID":"42"} is 31 bytes; 5089 bytes of name make 5120.
        let fits = VoIPNotification(
            bundleID: "com.example.app",
            appData: Call(callerName: String(repeating: "日", count: 1696) + "a", callID: "42"))
        #expect(try fits.payload().count == 5120)
        let field = [TruncatableText<VoIPNotification<Call>>("callerName", \.appData.callerName)]
        #expect(try fits.truncatedToFit(field).wasTruncated == false)
        let over = VoIPNotification(
            bundleID: "com.example.app",
            appData: Call(callerName: String(repeating: "日", count: 1696) + "ab", callID: "42"))
        #expect(throws: APNsError.validation(.payloadTooLarge(pushType: .voip, size: 5121, limit: 5120))) {
            try over.payload()
        }
        let fitted = try over.truncatedToFit(field)
        let name = String(repeating: "日", count: 1695) + "…"
        #expect(try fitted.notification.payload() == Array((#"{"callerName":""# + name + #"","callID":"42"}"#).utf8))
        #expect(fitted.size == 5119)
        #expect(fitted.cuts == [TextCut(field: "callerName", text: name, removedCharacters: 3, removedBytes: 2)])
    }

    struct Score: Codable, Hashable, Sendable { var points: Int }

    @Test func liveActivityAlertFitsTheBroadcastLimit() throws {
        let update = LiveActivityNotification(
            bundleID: "com.example.app", update: Score(points: 1),
            timestamp: Date(timeIntervalSince1970: 1_700_000_000),
            alert: LiveActivityAlert(title: "Goal", body: .text(String(repeating: "ü", count: 3000))))
        let broadcastLimit = try #require(PushType.liveactivity.maximumBroadcastPayloadSize)
        let fitted = try update.truncatedToFit(limit: broadcastLimit)
        #expect(fitted.cuts.map(\.field) == ["body"])
        #expect(fitted.size <= 5120 && fitted.size >= 5118)
        let onDevice = try update.truncatedToFit()
        #expect(onDevice.size <= 4096 && onDevice.size >= 4094)
        #expect(try onDevice.notification.request(to: device).body.count == onDevice.size)
    }

    @Test func aCustomEllipsis() throws {
        let fitted = try bodyAlert(String(repeating: "a", count: 4100)).truncatedToFit(ellipsis: " [more]")
        #expect(
            try fitted.notification.payload()
                == Array(payloadText(String(repeating: "a", count: 4060) + " [more]").utf8))
    }

    /// A deterministic generator, so a failure names a reproducible case.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Random text of every width (ASCII, escapes, control characters, 2-, 3- and 4-byte
    /// characters, combining marks, ZWJ emoji) around the boundary: the result always fits, is
    /// valid JSON whose body is a prefix of the original plus the ellipsis, and keeps as much as
    /// fits (one more character would not).
    @Test func randomTextAlwaysFitsAndKeepsAllThatFits() throws {
        let pieces = ["a", " ", "\"", "\\", "\n", "\u{01}", "é", "日", "😀", "e\u{301}", "👩‍👩‍👧‍👦", "🇫🇷", "/"]
        var random = SplitMix(state: 42)
        for round in 0..<300 {
            var body = ""
            let target = Int.random(in: 3_900...4_400, using: &random)
            while body.utf8.count < target { body += pieces.randomElement(using: &random) ?? "a" }
            let fitted = try bodyAlert(body).truncatedToFit()
            let payload = try fitted.notification.payload()
            #expect(payload.count <= 4096 && payload.count == fitted.size, "round \(round)")
            let json = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: [String: [String: String]]]
            let sent = try #require(json?["aps"]?["alert"]?["body"], "round \(round)")
            guard fitted.wasTruncated else {
                #expect(sent == body && fitted.originalSize <= 4096)
                continue
            }
            #expect(fitted.originalSize > 4096)
            #expect(sent.hasSuffix("…"))
            let kept = String(sent.dropLast())
            #expect(body.hasPrefix(kept), "round \(round)")
            #expect(kept.last?.isWhitespace != true)
            // Maximal: the kept text plus the next character (and any whitespace before it) would not fit.
            var longer = Substring(body.dropFirst(kept.count))
            var extended = kept
            while let next = longer.first {
                extended.append(next)
                longer = longer.dropFirst()
                if !next.isWhitespace { break }
            }
            let bigger = try? bodyAlert(extended + "…").payload()
            #expect(bigger == nil, "round \(round): \(extended.count) characters would still fit")
        }
    }
}
