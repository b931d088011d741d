// What swift-apns writes must always be JSON that parses back to the same values: the streaming
// writer with arbitrary strings and numbers, and app data through the encoder inside a real push.
@testable import APNs
import Foundation

struct FuzzedAppData: Encodable {
    var text: String
    var number: Int64
    var fraction: Double
    var list: [String]
    var nested: [String: String]
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    // 1. The writer alone.
    var writer = JSONWriter(capacity: Int(input.byte()))
    var strings: [String] = []
    writer.beginObject()
    for index in 0..<Int(input.byte() % 8) {
        writer.key("k\(index)")
        switch input.byte() % 5 {
        case 0:
            let value = input.string(limit: 80)
            strings.append(value)
            writer.string(value)
        case 1: writer.int(input.int64())
        case 2: writer.double(input.double())
        case 3: writer.bool(input.byte() & 1 == 1)
        default:
            writer.beginArray()
            for _ in 0..<Int(input.byte() % 4) { writer.string(input.string(limit: 16)) }
            writer.endArray()
        }
    }
    writer.endObject()
    let written = writer.bytes
    guard let parsed = try? JSONSerialization.jsonObject(with: Data(written)) as? [String: Any] else {
        violated("writer produced invalid JSON: \(String(decoding: written, as: UTF8.self))")
    }
    let parsedStrings = parsed.values.compactMap { $0 as? String }
    for value in strings where !parsedStrings.contains(value) {
        violated("string did not round-trip: \(value.debugDescription)")
    }

    // 2. App data through a real notification (streaming encoder, with its fallback).
    let data = FuzzedAppData(
        text: input.string(), number: input.int64(), fraction: input.double(),
        list: (0..<Int(input.byte() % 3)).map { _ in input.string(limit: 12) },
        nested: [input.string(limit: 8): input.string(limit: 8)])
    let notification = AlertNotification(bundleID: "com.example.app", appData: data) { Alert(input.string(limit: 40)) }
    guard let device = try? Device(tokenBytes: [0xab]) else { violated("a one-byte token was refused") }
    do {
        let request = try notification.request(to: device)
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            violated("payload is not JSON: \(request.bodyText)")
        }
        if object["text"] as? String != data.text { violated("app data string did not round-trip") }
        if request.body.count > PushType.alert.maximumPayloadSize { violated("oversize payload accepted") }
    } catch {
        // Only the documented reasons: non-finite numbers, size.
        switch error {
        case .validation(.nonFiniteNumber), .validation(.payloadTooLarge): break
        default: violated("unexpected \(error)")
        }
    }
    return 0
}
