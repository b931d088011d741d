import APNs
import APNsTesting
import Foundation

func go() async throws {
    let connector = TokenRecordingConnector { _ in .rejected(.unregistered, timestamp: Date()) }
    do {
        try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: Device(token: "abcd"))
    } catch let rejection as APNsRejection {
        switch rejection.reason {
        case .unregistered, .badDeviceToken: print("forget", rejection.timestamp as Any)
        case .tooManyRequests: print("later")
        default: print(rejection.reason.retry)
        }
    } catch let error as APNsValidationError {
        print(error.description)
    } catch let error as TransportError {
        print(error.code)
    }
}
