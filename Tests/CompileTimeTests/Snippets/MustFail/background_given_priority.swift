// expect: has no priority to set
import APNs
let notification = BackgroundNotification(bundleID: "com.example.app", priority: .immediate)
