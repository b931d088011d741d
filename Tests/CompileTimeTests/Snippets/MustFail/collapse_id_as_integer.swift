// expect: cannot convert value of type 'Int' to expected argument type 'CollapseID'
import APNs
let notification = AlertNotification(bundleID: "com.example.app", collapseID: 42) { Alert("x") }
