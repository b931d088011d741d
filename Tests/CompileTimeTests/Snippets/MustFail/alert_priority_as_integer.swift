// expect: cannot convert value of type 'Int' to expected argument type 'AlertNotification<NoAppData>.Priority'
import APNs
let notification = AlertNotification(bundleID: "com.example.app", priority: 7) { Alert("x") }
