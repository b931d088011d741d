// expect: cannot convert value of type 'Int' to expected argument type 'Expiration'
import APNs
let notification = AlertNotification(bundleID: "com.example.app", expiration: 0) { Alert("x") }
