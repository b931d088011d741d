// expect: is unavailable: a bulk send takes Devices, not tokens: map them first, tokens.map { try Device(token: $0) }
import APNs
import APNsTesting
let connector = TokenRecordingConnector()
let n = AlertNotification(bundleID: "com.example.app") { Alert("x") }
let outcomes = try bulkSendOutcomes(n, via: connector, to: ["00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"])
