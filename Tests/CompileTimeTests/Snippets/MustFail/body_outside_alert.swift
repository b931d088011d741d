// expect: argument type 'Body' does not conform to expected type 'AlertNotificationComponent'
import APNs
let notification = AlertNotification(bundleID: "com.example.app") {
    Badge(1)
    Body("Outside")
}
