import APNs
import Foundation

struct Order: Encodable, Sendable { var placedAt: Date; var receipt: Data; var detail: RawJSONObject }
struct Score: Encodable, Sendable { var home: Int }

func strategies() throws -> [APNsRequest] {
    let device = try Device(token: "00fc13adff78")
    var alert = AlertNotification(bundleID: "com.example.app", appData: Order(placedAt: .now, receipt: Data(), detail: try RawJSONObject("{}"))) { Alert("Shipped") }
    alert.appDataEncoding = AppDataEncoding(dates: .secondsSince1970, data: .base64, keys: .convertToSnakeCase)
    var voip = VoIPNotification(bundleID: "com.example.app", appData: Order(placedAt: .now, receipt: Data(), detail: try RawJSONObject("{}")))
    voip.appDataEncoding = AppDataEncoding(dates: .iso8601, data: .deferredToData)
    var update = LiveActivityNotification(bundleID: "com.example.app", update: Score(home: 1), timestamp: .now)
    update.contentEncoding = .default
    return [try alert.request(to: device), try voip.request(to: device), try update.request(to: device)]
}
