// The first lines a user writes: the device and the send in one `do`, caught by case. Compiles
// only while Device(token:) throws APNsError, as send does.
import APNs
func go(_ connector: TokenConnector, _ hex: String, _ channelID: String) async {
    do {
        let device = try Device(token: hex)
        try await send(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, via: connector, to: device)
        let channel = try BroadcastChannel(id: channelID, bundleID: "com.example.app")
        print(channel)
    } catch .validation(let problem) {
        print("fix it:", problem)
    } catch .rejected(let rejection) where rejection.reason == .unregistered {
        print("forget the device", rejection.timestamp as Any)
    } catch {
        print(error.mayHaveBeenDelivered)
    }
}
