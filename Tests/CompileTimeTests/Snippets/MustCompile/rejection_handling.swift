import APNs
import APNsTesting
import Foundation

func go() async throws {
    let connector = TokenRecordingConnector { _ in .rejected(.unregistered, timestamp: Date()) }
    let device = try Device(token: "abcd")
    // Every `try` in the `do` throws APNsError, so the catches can name its cases.
    do {
        try await send(AlertNotification(bundleID: "a.b") { Alert("x") }, via: connector, to: device, timeout: .seconds(5))
    } catch .rejected(let rejection) where rejection.reason == .unregistered {
        print("forget", rejection.timestamp as Any)
    } catch .transport(let failure) where failure.delivery == .notSent {
        print("never left; safe to retry", failure.kind)
    } catch {
        switch error.retryAdvice {
        case .never, .afterRefreshingToken, .onNewConnection: print(error.description)
        case .safe, .mayDuplicate: print(error.mayHaveBeenDelivered)
        case .afterDelay(let delay), .withBackoff(let delay): print(delay as Any)
        }
    }
}
