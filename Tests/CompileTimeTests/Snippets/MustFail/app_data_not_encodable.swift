// expect: conform to 'Encodable'
import APNs
struct Opaque: Sendable { var id = 1 }
let notification = AlertNotification(bundleID: "com.example.app", appData: Opaque()) { Alert("x") }
