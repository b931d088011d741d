// expect: type 'Mutable' does not conform to the 'Sendable' protocol
import APNs
final class Mutable: Encodable { var id = 1 }
let notification = AlertNotification(bundleID: "com.example.app", appData: Mutable()) { Alert("x") }
