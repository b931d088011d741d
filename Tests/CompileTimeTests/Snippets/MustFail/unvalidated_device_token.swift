// expect: call can throw but is not marked with 'try'
import APNs
let device = Device(token: "00fc13adff78")
