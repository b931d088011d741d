// expect: argument type 'Sound' does not conform to expected type 'AlertComponent'
import APNs
let n = AlertNotification(bundleID: "a.b") { Alert { Body("x"); Sound.default } }
