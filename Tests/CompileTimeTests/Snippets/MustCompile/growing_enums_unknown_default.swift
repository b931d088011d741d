import APNs

// The enums that grow (Errors, "Switching over the library's enums"): an exhaustive switch with
// `@unknown default` compiles without a warning today, and a case added later is a warning.
func describe(_ error: APNsError) -> String {
    switch error {
    case .validation(let problem):
        switch problem {
        case .payloadTooLarge: return "too large"
        default: return "invalid"
        }
    case .credential: return "credential"
    case .rejected(let rejection):
        switch rejection.reason?.retry {
        case .never?, .later?, .afterRefreshingToken?, .onNewConnection?, .withBackoff?: return "rejected"
        case nil: return "rejected without a reason"
        @unknown default: return "rejected"
        }
    case .transport(let failure):
        switch failure.delivery {
        case .notSent: return "not sent"
        case .unknown: return "may have been delivered"
        }
    case .bulkResultsAlreadyIterated: return "iterated twice"
    @unknown default: return "other"
    }
}

func advice(_ error: APNsError) -> Bool {
    switch error.retryAdvice {
    case .safe, .afterDelay, .withBackoff: return true
    case .never, .mayDuplicate, .afterRefreshingToken, .onNewConnection: return false
    @unknown default: return false
    }
}
