// expect: has no member 'priority'
import APNs
var notification = BackgroundNotification(bundleID: "com.example.app")
func change() { notification.priority = .immediate }
