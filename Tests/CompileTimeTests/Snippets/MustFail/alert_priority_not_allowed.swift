// expect: has no member 'critical'
import APNs
let notification = AlertNotification(bundleID: "com.example.app", priority: .critical) { Alert("x") }
