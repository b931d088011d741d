// expect: extra trailing closure passed in call
import APNs
let n = AccessoryNotification(
    bundleID: "a.b", encryptedData: "AA==", sessionIdentifier: "s", keyID: "AA==", messageIndex: 1) { Alert("x") }
