#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How app data (and a Live Activity's content state and attributes) is encoded: the usual
/// `JSONEncoder` strategies for dates, data and keys.
///
/// The default is `JSONEncoder`'s own defaults — dates as seconds since 2001 (`deferredToDate`),
/// data as base64, keys as written — which is what a `JSONDecoder` with default settings on the
/// device reads, and what ActivityKit decodes a Live Activity's content state and attributes with.
/// Change it when the app decodes with other strategies:
///
/// ```swift
/// var notification = AlertNotification(bundleID: "com.example.app", appData: Order(placedAt: .now)) { Alert("Shipped") }
/// notification.appDataEncoding = AppDataEncoding(dates: .secondsSince1970, keys: .convertToSnakeCase)
/// // {"aps":{"alert":"Shipped"},"placed_at":1763856000}
/// ```
public struct AppDataEncoding: Hashable, Sendable {
    /// How `Date` values are written.
    public enum DateStrategy: Hashable, Sendable {
        /// Seconds since 2001-01-01, as `Date.encode(to:)` writes them (`JSONEncoder`'s default).
        case deferredToDate
        /// Seconds since 1970 (fractions kept).
        case secondsSince1970
        /// Milliseconds since 1970 (fractions kept).
        case millisecondsSince1970
        /// ISO 8601 text in UTC, whole seconds: `2026-11-23T10:00:00Z`.
        case iso8601
    }

    /// How `Data` values are written.
    public enum DataStrategy: Hashable, Sendable {
        /// A base64 string (`JSONEncoder`'s default).
        case base64
        /// An array of byte values, as `Data.encode(to:)` writes it.
        case deferredToData
    }

    /// How keys are written.
    public enum KeyStrategy: Hashable, Sendable {
        /// As the coding keys say (`JSONEncoder`'s default).
        case useDefaultKeys
        /// `camelCase` → `camel_case`, as `JSONEncoder.KeyEncodingStrategy.convertToSnakeCase`.
        case convertToSnakeCase
    }

    /// How dates are written.
    public var dates: DateStrategy
    /// How `Data` is written.
    public var data: DataStrategy
    /// How keys are written.
    public var keys: KeyStrategy

    /// Strategies; each defaults to `JSONEncoder`'s.
    public init(
        dates: DateStrategy = .deferredToDate, data: DataStrategy = .base64, keys: KeyStrategy = .useDefaultKeys
    ) {
        self.dates = dates
        self.data = data
        self.keys = keys
    }

    /// `JSONEncoder`'s defaults.
    public static let `default` = AppDataEncoding()

    /// `key` as this strategy writes it.
    func name(of key: String) -> String {
        keys == .useDefaultKeys ? key : AppDataEncoding.snakeCase(key)
    }

    /// Foundation's conversion, step for step (so `URLValue` becomes `u_rl_value`, as
    /// `JSONEncoder` writes it): a word ends before each capital; a run of capitals followed by
    /// lowercase letters is one word up to the last capital; words are lowercased and joined by `_`.
    static func snakeCase(_ key: String) -> String {
        let characters = Array(key)
        guard characters.count > 1 else { return key.lowercased() }
        var words: [Range<Int>] = []
        var wordStart = 0
        var searchStart = 1
        let end = characters.count
        func first(from start: Int, where predicate: (Character) -> Bool) -> Int? {
            var index = start
            while index < end {
                if predicate(characters[index]) { return index }
                index += 1
            }
            return nil
        }
        while let upper = first(from: searchStart, where: \.isUppercase) {
            words.append(wordStart..<upper)
            guard let lower = first(from: upper, where: \.isLowercase) else {
                wordStart = upper
                searchStart = end
                break
            }
            if lower == upper + 1 {
                wordStart = upper
                searchStart = upper + 1
            } else {
                words.append(upper..<(lower - 1))
                wordStart = lower - 1
                searchStart = lower + 1
            }
        }
        words.append(wordStart..<end)
        return words.map { String(characters[$0]).lowercased() }.joined(separator: "_")
    }
}
