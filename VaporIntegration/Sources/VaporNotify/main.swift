import NotifyApp
import Vapor

// The example app: `swift run VaporNotify serve` with APNS_* set (see NotifyApp/configure.swift).
// SIGTERM or Ctrl-C stops the server, then the connectors, letting sends in flight finish.
var environment = try Environment.detect()
try LoggingSystem.bootstrap(from: &environment)
let app = try await Application.make(environment)
do {
    try configure(app)
    try await app.execute()
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    throw error
}
try await app.asyncShutdown()
