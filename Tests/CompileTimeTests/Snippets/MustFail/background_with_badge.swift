// expect: carries no alert, badge or sound
import APNs
let notification = BackgroundNotification(bundleID: "com.example.app") { Badge(1) }
