@_exported import TestFixtures
import APNs
import Testing

/// Expects `body` to fail with APNs' rejection `reason` (and `status`).
func expectRejection(
    _ reason: APNsRejection.Reason, status: Int, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected a \(status) \(reason) rejection", sourceLocation: sourceLocation)
    } catch let error as APNsError {
        guard case .rejected(let rejection) = error else {
            Issue.record("expected a \(status) \(reason) rejection, got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(rejection.status == status, sourceLocation: sourceLocation)
        #expect(rejection.reason == reason, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected an APNsError, got \(error)", sourceLocation: sourceLocation)
    }
}

/// The transport failure `error` carries, if any.
func transportFailure(_ error: any Error) -> TransportError? {
    if case .transport(let failure)? = error as? APNsError { return failure }
    return nil
}
