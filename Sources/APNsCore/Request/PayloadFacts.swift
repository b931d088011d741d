#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the run-time rules need to know of a payload's `aps` dictionary: which of the keys they
/// look at it has, its `event` and its `timestamp`.
///
/// Noted by ``JSONWriter`` while it writes the body (``PushNotification/request(to:)`` keeps them
/// in the request), so checking a request costs no second parse; read from the body only for a
/// request built by hand, or whose body was replaced or written as raw JSON text.
struct PayloadFacts: Hashable, Sendable {
    /// The `aps` keys the rules look at.
    struct Keys: OptionSet, Hashable, Sendable {
        let rawValue: UInt8
        static let alert = Keys(rawValue: 1 << 0)
        static let contentState = Keys(rawValue: 1 << 1)
        static let attributesType = Keys(rawValue: 1 << 2)
        static let attributes = Keys(rawValue: 1 << 3)
        static let timestamp = Keys(rawValue: 1 << 4)
        static let event = Keys(rawValue: 1 << 5)

        /// The key's flag, for a name (UTF-8) the rules look at.
        @inline(__always)
        init?(utf8 name: UnsafeBufferPointer<UInt8>) {
            switch name.count {
            case 5:
                if name.elementsEqual("alert".utf8) { self = .alert; return }
                if name.elementsEqual("event".utf8) { self = .event; return }
            case 9: if name.elementsEqual("timestamp".utf8) { self = .timestamp; return }
            case 10: if name.elementsEqual("attributes".utf8) { self = .attributes; return }
            case 13: if name.elementsEqual("content-state".utf8) { self = .contentState; return }
            case 15: if name.elementsEqual("attributes-type".utf8) { self = .attributesType; return }
            default: break
            }
            return nil
        }

        /// The key's flag, for a name the rules look at.
        init?(name: String) {
            var name = name
            guard let key = name.withUTF8({ Keys(utf8: $0) }) else { return nil }
            self = key
        }

        init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The key's name in the payload.
        var name: String {
            switch self {
            case .alert: return "alert"
            case .contentState: return "content-state"
            case .attributesType: return "attributes-type"
            case .attributes: return "attributes"
            case .timestamp: return "timestamp"
            default: return "event"
            }
        }
    }

    /// The keys present in `aps`.
    var keys: Keys = []
    /// `aps.event` when it is a string.
    var event: String?
    /// `aps.timestamp` when it is an integer.
    var timestamp: Int64?

    init() {}

    /// Reads the facts from a body (for requests whose writer did not note them). A body that is not
    /// a JSON object, or has no `aps` object, has no facts to read: every key is absent.
    init(parsing body: [UInt8]) {
        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(body)) else { return }
        self = payload.aps?.facts ?? PayloadFacts()
    }

    private struct Payload: Decodable {
        var aps: APS?
    }

    private struct APS: Decodable {
        var facts = PayloadFacts()

        struct Name: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Name.self)
            for name in container.allKeys {
                guard let key = Keys(name: name.stringValue) else { continue }
                facts.keys.insert(key)
                if key == .event { facts.event = try? container.decode(String.self, forKey: name) }
                if key == .timestamp { facts.timestamp = try? container.decode(Int64.self, forKey: name) }
            }
        }
    }
}
