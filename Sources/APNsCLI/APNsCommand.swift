import ArgumentParser

/// `apns`: send push notifications, inspect credentials, run a local mock APNs, or watch both in a demo.
@main
struct APNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Send Apple push notifications over HTTP/2, or run a local mock APNs server.",
        discussion: Failure.exitCodes,
        subcommands: [Demo.self, SendCommand.self, ChannelsCommand.self, InspectCommand.self, MockServerCommand.self]
    )
}
