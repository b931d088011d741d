// expect: argument type 'Badge' does not conform to expected type 'AlertComponent'
import APNs
let notification = AlertNotification(bundleID: "com.example.app") { Alert { Title("x"); Badge(2) } }
