import APNs
import ArgumentParser
import Foundation

/// `apns channels`: manage Live Activity broadcast channels (protocol reference, Broadcast channels).
struct ChannelsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channels",
        abstract: "Create, read, delete and list Live Activity broadcast channels.",
        subcommands: [Create.self, Read.self, Delete.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a channel and print its id.")
        enum Policy: String, ExpressibleByArgument, CaseIterable {
            case noMessageStored = "no-message-stored"
            case mostRecentMessageStored = "most-recent-message-stored"
        }
        @OptionGroup var connection: ConnectionOptions
        @Option(name: .customLong("bundle-id")) var bundleID: String
        @Option(help: "no-message-stored or most-recent-message-stored.") var policy: Policy = .noMessageStored
        @Option(name: .customLong("request-id")) var requestID: String?

        func run() async throws {
            try await Failure.reporting {
                let channel = try await connection.withRequiredConnector { connector in
                    try await ChannelManager(connector).create(
                        bundleID: bundleID,
                        storagePolicy: policy == .noMessageStored ? .noMessageStored : .mostRecentMessageStored,
                        requestID: try ChannelsCommand.requestID(requestID))
                }
                print(channel.id)
            }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a channel's storage policy and push type.")
        @OptionGroup var connection: ConnectionOptions
        @Option(name: .customLong("bundle-id")) var bundleID: String
        @Option var channel: String

        func run() async throws {
            try await Failure.reporting {
                let info = try await connection.withRequiredConnector { connector in
                    try await ChannelManager(connector).read(BroadcastChannel(id: channel, bundleID: bundleID))
                }
                print("message-storage-policy \(info.storagePolicy.rawValue) push-type \(info.pushType)")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a channel.")
        @OptionGroup var connection: ConnectionOptions
        @Option(name: .customLong("bundle-id")) var bundleID: String
        @Option var channel: String

        func run() async throws {
            try await Failure.reporting {
                try await connection.withRequiredConnector { connector in
                    try await ChannelManager(connector).delete(BroadcastChannel(id: channel, bundleID: bundleID))
                }
                print("deleted \(channel)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print every channel id of an app, one per line.")
        @OptionGroup var connection: ConnectionOptions
        @Option(name: .customLong("bundle-id")) var bundleID: String

        func run() async throws {
            try await Failure.reporting {
                let channels = try await connection.withRequiredConnector { connector in
                    try await ChannelManager(connector).list(bundleID: bundleID)
                }
                for channel in channels {
                    print(channel.id)
                }
            }
        }
    }

    static func requestID(_ text: String?) throws -> APNsID? {
        guard let text else { return nil }
        guard let id = APNsID(text) else { throw UsageError("--request-id \(text) is not a UUID") }
        return id
    }
}
