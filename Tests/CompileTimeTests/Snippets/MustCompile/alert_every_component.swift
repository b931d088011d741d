import APNs
import APNsTesting
import Foundation

struct Chat: Encodable, Sendable { var chatID: String; var sentAt: Date }
enum Mood { case calm, urgent }

func build(unread: Int?, mood: Mood, lines: [String]) throws -> AlertNotification<Chat> {
    AlertNotification(
        bundleID: "com.example.app", appData: Chat(chatID: "42", sentAt: Date()), priority: .powerConsiderate,
        expiration: try .at(Date().addingTimeInterval(3600)), collapseID: "chat-42", apnsID: APNsID()
    ) {
        Alert {
            Title("New message")
            Subtitle(localizedKey: "FROM_%@", arguments: ["Ana"])
            for line in lines.prefix(1) { Body(line) }
            LaunchImage("chat.png")
        }
        if let unread { Badge(unread) }
        switch mood {
        case .calm: InterruptionLevel.passive
        case .urgent: InterruptionLevel.timeSensitive
        }
        Sound.critical("ping.caf", volume: 0.5)
        ThreadID("chat-42")
        Category("MESSAGE")
        MutableContent()
        TargetContentID("chat-42")
        RelevanceScore(0.7)
        FilterCriteria("friends")
    }
}

func go() async throws {
    let device = try Device(token: "00fc13adff78")
    try await send(build(unread: 3, mood: .urgent, lines: ["hi"]), via: TokenRecordingConnector(), to: device)
    try await send(build(unread: nil, mood: .calm, lines: []), via: CertificateRecordingConnector(), to: device)
}
