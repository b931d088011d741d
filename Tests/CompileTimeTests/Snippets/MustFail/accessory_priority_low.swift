// expect: has no member 'low'
import APNs
let n = AccessoryNotification(
    bundleID: "a.b", encryptedData: "AA==", sessionIdentifier: "s", keyID: "AA==", messageIndex: 1, priority: .low)
