// APNs answers are input too: any status, headers and body must give an APNsResponse or an
// APNsRejection without crashing, with the body kept (at most 4096 bytes) and no invented reason.
@testable import APNs
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponses(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let status = Int(input.byte()) << 8 | Int(input.byte())
    var headers: [APNsRequest.Header] = []
    for _ in 0..<Int(input.byte() % 6) {
        let names = ["apns-id", "apns-unique-id", "retry-after", "apns-request-id", "content-type"]
        let name = input.byte() % 3 == 0 ? input.string(limit: 16).lowercased() : names[Int(input.byte()) % names.count]
        headers.append(.init(name: name, value: input.string(limit: 48)))
    }
    let body = input.rest()
    let response = APNsHTTPResponse(status: status, headers: headers, body: body)
    do {
        let accepted = try APNsResponse(interpreting: response)
        if !(200..<300).contains(accepted.status) { violated("accepted a \(accepted.status)") }
        _ = accepted.description
    } catch {
        if (200..<300).contains(status) { violated("rejected a \(status)") }
        if error.body != Array(body.prefix(4096)) { violated("body not kept") }
        if let reason = error.reason, !body.contains(UInt8(ascii: "{")) {
            violated("reason \(reason) from a body with no JSON object")
        }
        if let retryAfter = error.retryAfter, retryAfter < .zero || retryAfter > .seconds(86_400) {
            violated("retry-after \(retryAfter)")
        }
        _ = error.description
        _ = error.retry
    }
    return 0
}
