// expect: argument type 'LiveActivityAlert' does not conform to expected type 'AlertNotificationComponent'
import APNs
let n = AlertNotification(bundleID: "a.b") { LiveActivityAlert(title: "t", body: "b") }
