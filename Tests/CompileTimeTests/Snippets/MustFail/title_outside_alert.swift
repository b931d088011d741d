// expect: argument type 'Title' does not conform to expected type 'AlertNotificationComponent'
import APNs
let notification = AlertNotification(bundleID: "com.example.app") { Title("Outside") }
