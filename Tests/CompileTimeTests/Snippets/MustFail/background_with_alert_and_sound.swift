// expect: carries no alert, badge or sound
import APNs
struct Sync: Encodable, Sendable { var id = 1 }
let notification = BackgroundNotification(bundleID: "com.example.app", appData: Sync()) {
    Alert("Hello")
    Sound.default
}
