// Device tokens and apns-ids come from apps and databases: parsing never crashes, and what parses
// round-trips to the canonical form.
@testable import APNs
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokens(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let text = input.string(limit: 200)
    if let device = try? Device(token: text) {
        if device.token != device.token.lowercased() { violated("token not lowercase: \(device.token)") }
        if device.token.utf8.count % 2 != 0 || device.token.isEmpty { violated("odd or empty token") }
        guard let again = try? Device(token: device.token), again == device else {
            violated("token does not round-trip")
        }
        if device.path != "/3/device/" + device.token { violated("path \(device.path)") }
    }
    let raw = input.chunk(limit: 100)
    if let device = try? Device(tokenBytes: raw) {
        if device.token.utf8.count != raw.count * 2 { violated("hex length") }
    }
    if let id = APNsID(text) {
        let canonical = id.description
        if canonical.utf8.count != 36 || canonical != canonical.lowercased() {
            violated("apns-id not canonical: \(canonical)")
        }
        if APNsID(canonical) != id { violated("apns-id does not round-trip") }
    }
    return 0
}
