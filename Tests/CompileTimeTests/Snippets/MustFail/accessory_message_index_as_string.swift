// expect: cannot convert value of type 'String' to expected argument type 'UInt64'
import APNs
let n = AccessoryNotification(
    bundleID: "a.b", encryptedData: "AA==", sessionIdentifier: "s", keyID: "AA==", messageIndex: "42")
