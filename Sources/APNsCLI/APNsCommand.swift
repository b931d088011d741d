import ArgumentParser
import Foundation

/// `apns`: send push notifications, inspect credentials, run a local mock APNs, or watch both in a demo.
@main
struct APNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Send Apple push notifications over HTTP/2, or run a local mock APNs server.",
        discussion: Failure.exitCodes,
        subcommands: [Demo.self, SendCommand.self, ChannelsCommand.self, InspectCommand.self, MockServerCommand.self]
    )

    /// As ArgumentParser's, except that a command line it cannot parse (a missing value, an
    /// unknown option, a value of the wrong type) exits 2 like every other usage error, not
    /// ArgumentParser's 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            exit(withError: ExitCode(2))
        }
    }
}
