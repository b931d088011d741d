import APNs
import Foundation
import Testing

/// `openapi.yaml` repeats some of the library's push-type facts, because JSON Schema cannot read
/// them from Swift: which push types exist, the priorities each takes, push-to-talk's fixed
/// expiration, the topic suffixes a bundle id may not end with, and MDM's topic prefix. `PushType`
/// owns them; these tests fail when the file and the owner disagree, so a change to a push type's
/// rules cannot leave the published schema behind.
///
/// The file is read line by line, as it is written (one `push-type` line per shape, followed by
/// that shape's `priority` line, plain or through a YAML anchor): no YAML parser is needed for it.
@Suite struct OpenAPIFileTests {
    static let lines: [Substring] = {
        let file = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("openapi.yaml")
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false)
    }()

    /// The items of the first `enum: [a, b]` on `line`, or `nil` when it has none.
    static func enumItems(_ line: Substring) -> [String]? {
        guard let start = line.range(of: "enum: [") else { return nil }
        let rest = line[start.upperBound...]
        guard let end = rest.firstIndex(of: "]") else { return nil }
        return rest[..<end].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    static func indentation(_ line: Substring) -> Int { line.prefix { $0 == " " }.count }

    /// The value of `key:` among the properties that follow line `index` at its indentation, with
    /// a `*anchor` alias resolved to the line that defines `&anchor`.
    static func sibling(_ key: String, after index: Int) -> Substring? {
        let depth = indentation(lines[index])
        for line in lines[(index + 1)...] {
            let level = indentation(line)
            if level < depth && !line.allSatisfy({ $0 == " " }) { return nil }
            guard level == depth, line.dropFirst(depth).hasPrefix("\(key):") else { continue }
            let value = line.dropFirst(depth + key.count + 1).trimmingCharacters(in: .whitespaces)
            guard value.hasPrefix("*") else { return line }
            return lines.first { $0.contains("&\(value.dropFirst()) ") }
        }
        return nil
    }

    /// Line numbers of `push-type: { type: string, enum: [x] }`, the shape of each push type.
    static var pushTypeLines: [(index: Int, rawValue: String)] {
        lines.indices.compactMap { index in
            let line = lines[index].trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("push-type: { type: string, enum: ["), let items = enumItems(lines[index]),
                items.count == 1
            else { return nil }
            return (index, items[0])
        }
    }

    @Test func theFileIsThere() {
        #expect(Self.lines.count > 100, "openapi.yaml was not found beside Package.swift")
    }

    @Test func everyPushTypeHasOneShapeAndNoOtherExists() {
        let named = Self.pushTypeLines.map(\.rawValue)
        #expect(named.sorted() == PushType.allCases.map(\.rawValue).sorted())
    }

    @Test(arguments: PushType.allCases)
    func eachShapeTakesTheLibrarysPriorities(_ pushType: PushType) throws {
        let shape = try #require(Self.pushTypeLines.first { $0.rawValue == pushType.rawValue })
        let line = try #require(Self.sibling("priority", after: shape.index), "\(pushType) has no priority")
        let priorities = try #require(Self.enumItems(line)).compactMap(Int.init)
        #expect(Set(priorities) == Set(pushType.allowedPriorities.map(\.rawValue)), "\(pushType): \(line)")
    }

    @Test(arguments: PushType.allCases)
    func aFixedExpirationIsStated(_ pushType: PushType) throws {
        let shape = try #require(Self.pushTypeLines.first { $0.rawValue == pushType.rawValue })
        let line = Self.sibling("expiration", after: shape.index)
        if let required = pushType.requiredExpiration {
            let stated = try #require(line.flatMap(Self.enumItems), "\(pushType) must state its expiration")
            #expect(stated == [String(required)])
        } else if let line {
            #expect(Self.enumItems(line) == nil, "\(pushType) has no fixed expiration: \(line)")
        }
    }

    /// A bundle id may not end with a suffix that makes another push type's topic: the schema's
    /// `not` pattern lists exactly the library's `.push-type.` suffixes.
    @Test func theBundleIDPatternRefusesEveryPushTypeSuffix() throws {
        let line = try #require(Self.lines.first { $0.contains(#"not: { pattern: "\\.push-type\\.("#) })
        let open = try #require(line.range(of: #"push-type\\.("#))
        let close = try #require(line[open.upperBound...].firstIndex(of: ")"))
        let stated = line[open.upperBound..<close].split(separator: "|").map(String.init)
        let suffixes = PushType.allCases.compactMap(\.topicSuffix).filter { $0.hasPrefix(".push-type.") }
            .map { String($0.dropFirst(".push-type.".count)) }
        #expect(stated.sorted() == suffixes.sorted())
    }

    @Test func theMDMTopicStartsWithTheLibrarysPrefix() throws {
        let prefix = try #require(PushType.mdm.topicPrefix)
        let escaped = prefix.replacingOccurrences(of: ".", with: #"\\."#)
        #expect(Self.lines.contains { $0.contains(#"pattern: "^"# + escaped) })
    }
}
