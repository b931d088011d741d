// expect: cannot convert value of type 'String' to expected argument type 'APNsID'
import APNs
let notification = AlertNotification(bundleID: "com.example.app", apnsID: "7f3c9a2b-1d4e-4f5a-8b6c-9d0e1f2a3b4c") { Alert("x") }
