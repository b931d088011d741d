import APNs

func readme() async throws {
    let connector = try TokenConnector(
        teamID: "DEF123GHIJ", keyID: "ABC123DEFG",
        key: .file(path: "AuthKey_ABC123DEFG.p8"), environment: .sandbox)

    let notification = AlertNotification(bundleID: "com.example.app") {
        Alert {
            Title("Game Request")
            Body("Bob wants to play poker")
        }
        Badge(3)
        Sound.default
    }

    let device = try Device(token: "00fc13adff785122b4ad28809a34209823")
    do {
        let response = try await send(notification, via: connector, to: device)
        print(response.apnsID as Any)
    } catch .rejected(let rejection) where rejection.reason == .unregistered {
        print("forget this device", rejection.timestamp as Any)
    } catch {
        print(error.description, error.mayHaveBeenDelivered)
    }
}
