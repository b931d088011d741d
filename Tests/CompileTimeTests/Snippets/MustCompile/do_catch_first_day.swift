// The rest of a first day inside the same `do`: an expiration, app data from JSON text, a
// priority from configuration, a shortened alert, the exact request and its payload, a Live
// Activity alert with interpolated text. Compiles only while each of them throws APNsError, as
// send does (one of another type made the `do` throw `any Error`, and `catch .rejected` an error
// about '_ErrorCodeProtocol').
import APNs
import Foundation

struct OrderState: Codable, Sendable { var stops: Int }

func firstDay(_ connector: TokenConnector, _ hex: String, _ when: Date, _ json: String, _ level: Int) async {
    do {
        let device = try Device(token: hex)
        let expiration = try Expiration.at(when)
        let stored = try Expiration(unixSeconds: 1_900_000_000)
        let data = try RawJSONObject(json)
        let priority = try PushType.alert.priority(level)
        let fitted = try AlertNotification(bundleID: "com.example.app", appData: data, expiration: expiration) {
            Alert { Title("Hi"); Body("There") }
        }.truncatedToFit()
        let request = try fitted.notification.request(to: device)
        let payload = try fitted.notification.payload()
        print(stored, priority, request, payload.count)
        try await send(fitted.notification, via: connector, to: device)
        let stops = 2
        let update = LiveActivityNotification(
            bundleID: "com.example.app", update: OrderState(stops: stops), timestamp: when,
            alert: LiveActivityAlert(title: "Order \(42)", body: "Your order is \(stops) stops away"))
        try await send(update, via: connector, to: device)
    } catch .validation(let problem) {
        print("fix it:", problem)
    } catch .rejected(let rejection) where rejection.reason == .unregistered {
        print("forget the device", rejection.timestamp as Any)
    } catch {
        print(error.mayHaveBeenDelivered)
    }
}
