/// What Apple writes into a push certificate, and which topics it therefore covers
/// (<doc:ProtocolReference#Certificate-authentication>): the one owner of these facts, read by the library's certificate
/// inspection, the certificate connector's checks, `apns inspect` and the mock certificate
/// authority that issues test certificates.
///
/// - `1.2.840.113635.100.6.3.1` marks a certificate for the sandbox (development),
///   `1.2.840.113635.100.6.3.2` one for production; a universal certificate carries both.
/// - `1.2.840.113635.100.6.3.6` lists the topics: a DER `SEQUENCE` of a `UTF8String` topic, each
///   followed by a `SEQUENCE` of the `UTF8String` kinds it is for (`app`, `voip`,
///   `complication`). `1.2.840.113635.100.6.3.4` (older VoIP Services certificates) has the same
///   shape.
/// - Certificates without a topic list (older single-app ones) cover the subject's `UID`.
public enum PushCertificate {
    /// The extension that marks a sandbox (development) certificate.
    package static let sandboxOID = "1.2.840.113635.100.6.3.1"
    /// The extension that marks a production certificate.
    package static let productionOID = "1.2.840.113635.100.6.3.2"
    /// The extension that lists the topics a certificate covers.
    package static let topicsOID = "1.2.840.113635.100.6.3.6"
    /// The topic list of older VoIP Services certificates.
    package static let voipTopicsOID = "1.2.840.113635.100.6.3.4"
    /// The subject attribute that holds the bundle id (`UID`, RFC 4519 `userid`).
    package static let userIDOID = "0.9.2342.19200300.100.1.1"

    /// An APNs environment a certificate is issued for.
    public enum Environment: String, Hashable, Sendable, CaseIterable, Comparable, CustomStringConvertible {
        /// `api.sandbox.push.apple.com`: development builds.
        case sandbox
        /// `api.push.apple.com`: App Store, TestFlight and ad-hoc builds.
        case production

        /// Sandbox before production.
        public static func < (lhs: Environment, rhs: Environment) -> Bool { lhs == .sandbox && rhs == .production }
        /// `sandbox` or `production`.
        public var description: String { rawValue }
    }

    /// One entry of a certificate's topic list: the topic and the kinds of push it is for.
    public struct Topic: Hashable, Sendable, CustomStringConvertible {
        /// The topic, e.g. `com.example.app` or `com.example.app.voip`.
        public var name: String
        /// `app`, `voip`, `complication`, …; empty when the certificate does not say (a topic taken
        /// from the subject's `UID`), which covers every kind.
        public var kinds: [String]

        /// A topic and its kinds.
        public init(_ name: String, kinds: [String]) {
            self.name = name
            self.kinds = kinds
        }

        /// `com.example.app (app)`.
        public var description: String { kinds.isEmpty ? name : "\(name) (\(kinds.joined(separator: ", ")))" }
    }

    /// The topic-list kind that covers `pushType`: `voip` and `complication` have their own
    /// entries; every other push type a certificate can send is covered by the app's entry.
    package static func topicKind(for pushType: PushType) -> String {
        switch pushType {
        case .voip: return "voip"
        case .complication: return "complication"
        default: return "app"
        }
    }

    /// Whether a certificate listing `topics` may send a push of `pushType` to `topic`.
    ///
    /// Covered when an entry names `topic` itself, or the bundle id inside it (a Live Activity's
    /// `<bundle>.push-type.liveactivity` is covered by `<bundle>`), and is for the push type's
    /// kind (``topicKind(for:)``) or says no kind. MDM topics (`com.apple.mgmt.…`) are covered
    /// only for MDM pushes. Apple does not document which kind covers Push to Talk, Live
    /// Activities or accessory responses; swift-apns takes the app's entry, and an answer of APNs says otherwise.
    package static func covers(_ topics: [Topic], topic: String, pushType: PushType) -> Bool {
        if pushType != .mdm, let prefix = PushType.mdm.topicPrefix, topic.hasPrefix(prefix) { return false }
        let bundleID = pushType.bundleID(fromTopic: topic)
        let kind = topicKind(for: pushType)
        return topics.contains { entry in
            (entry.name == topic || entry.name == bundleID) && (entry.kinds.isEmpty || entry.kinds.contains(kind))
        }
    }

    /// The topic a certificate listing `topics` would send `pushType` to, or nil when it covers
    /// no topic of that push type.
    package static func coveredTopic(of pushType: PushType, in topics: [Topic]) -> String? {
        for entry in topics {
            for candidate in [entry.name, pushType.topic(forBundleID: entry.name)]
            where pushType.bundleID(fromTopic: candidate) != nil && covers(topics, topic: candidate, pushType: pushType)
            {
                return candidate
            }
        }
        return nil
    }

    /// Decodes the value of a topic-list extension (the contents of its `extnValue`).
    /// - Throws: ``MalformedExtension`` when it is not a DER `SEQUENCE` of strings and sequences of
    ///   strings.
    package static func topics(fromExtensionValue der: [UInt8]) throws(MalformedExtension) -> [Topic] {
        var reader = DERReader(der)
        let list = try reader.element(tag: DERReader.sequence)
        guard reader.isAtEnd else { throw MalformedExtension(detail: "bytes after the topic list") }
        var entries = DERReader(list)
        var topics: [Topic] = []
        while !entries.isAtEnd {
            let (tag, contents) = try entries.anyElement()
            if DERReader.stringTags.contains(tag) {
                topics.append(Topic(String(decoding: contents, as: UTF8.self), kinds: []))
            } else if tag == DERReader.sequence {
                guard !topics.isEmpty else { throw MalformedExtension(detail: "a kind list before any topic") }
                var kinds = DERReader(contents)
                while !kinds.isAtEnd {
                    let (kindTag, kind) = try kinds.anyElement()
                    guard DERReader.stringTags.contains(kindTag) else {
                        throw MalformedExtension(detail: "a kind that is not a string")
                    }
                    topics[topics.count - 1].kinds.append(String(decoding: kind, as: UTF8.self))
                }
            } else {
                throw MalformedExtension(detail: "an element with DER tag \(tag)")
            }
        }
        return topics
    }

    /// The value of a topic-list extension for `topics`, as Apple encodes it (DER).
    package static func extensionValue(for topics: [Topic]) -> [UInt8] {
        var contents: [UInt8] = []
        for topic in topics {
            contents += DERReader.encode(tag: DERReader.utf8String, Array(topic.name.utf8))
            if !topic.kinds.isEmpty {
                contents += DERReader.encode(
                    tag: DERReader.sequence,
                    topic.kinds.flatMap { DERReader.encode(tag: DERReader.utf8String, Array($0.utf8)) })
            }
        }
        return DERReader.encode(tag: DERReader.sequence, contents)
    }

    /// A topic-list extension that is not the DER shape Apple uses.
    package struct MalformedExtension: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong with it.
        package let detail: String
        /// What is wrong, for logs.
        package var description: String { "The certificate's topic list is malformed: \(detail)." }
    }
}

/// Reads DER tag-length-value elements from bytes that may be malformed; every read is bounds
/// checked and throws instead of trapping. Thread safety: a value.
struct DERReader {
    static let sequence: UInt8 = 0x30
    static let utf8String: UInt8 = 0x0C
    /// UTF8String, PrintableString, IA5String.
    static let stringTags: Set<UInt8> = [0x0C, 0x13, 0x16]

    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    /// The next element's contents, which must carry `tag`.
    mutating func element(tag expected: UInt8) throws(PushCertificate.MalformedExtension) -> [UInt8] {
        let (tag, contents) = try anyElement()
        guard tag == expected else { throw .init(detail: "DER tag \(tag) where \(expected) was expected") }
        return contents
    }

    /// The next element's tag and contents (definite lengths only, as DER requires).
    mutating func anyElement() throws(PushCertificate.MalformedExtension) -> (tag: UInt8, contents: [UInt8]) {
        guard bytes.count - offset >= 2 else { throw .init(detail: "truncated") }
        let tag = bytes[offset]
        var length = Int(bytes[offset + 1])
        offset += 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...3).contains(count), bytes.count - offset >= count else { throw .init(detail: "a bad length") }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[offset])
                offset += 1
            }
        }
        guard bytes.count - offset >= length else { throw .init(detail: "truncated") }
        defer { offset += length }
        return (tag, Array(bytes[offset..<offset + length]))
    }

    /// `tag`, the DER length of `contents`, then `contents`.
    static func encode(tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        let count = contents.count
        let length: [UInt8]
        switch count {
        case ..<0x80: length = [UInt8(count)]
        case ..<0x100: length = [0x81, UInt8(count)]
        case ..<0x10000: length = [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        default: length = [0x83, UInt8(count >> 16), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
        }
        return [tag] + length + contents
    }
}
