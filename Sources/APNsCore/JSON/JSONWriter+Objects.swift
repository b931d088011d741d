#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension JSONWriter {
    /// Writes `{"aps":{<fixed>}}` for the push types whose whole payload Apple fixes.
    mutating func fixedAPS(_ body: (inout JSONWriter) -> Void) {
        beginObject()
        literalKey("aps")
        beginObject()
        body(&self)
        endObject()
        endObject()
    }

    /// Writes `"key":<value>` where `value` must encode as a JSON object, with `JSONEncoder`'s
    /// default strategies (content-state, attributes).
    mutating func encodedObject<Value: Encodable>(
        key name: String, _ value: Value, encoding: AppDataEncoding = .default
    ) throws(APNsValidationError) {
        if let raw = value as? RawJSONObject {
            key(name)
            rawValueText(Substring(raw.compactText))
            return
        }
        let node: AppDataEncoder.Node
        do {
            node = try AppDataEncoder.encode(value, options: encoding)
        } catch {
            switch error {
            case .nonFinite(let path): throw .nonFiniteNumber(path: "aps.\(name).\(path)")
            case .reserved(let key): throw .reservedAppDataKey(key)
            case .other(let message): throw .appDataEncodingFailed(message)
            }
        }
        guard case .object = node else { throw .notAnObject(key: name) }
        key(name)
        node.write(to: &self)
    }

    /// Writes a date as integer UNIX seconds (Live Activity dates, <doc:ProtocolReference#Live-Activities>).
    mutating func unixSeconds(key name: String, _ date: Date) throws(APNsValidationError) {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= 0, seconds < 1e15 else { throw .invalidDate(key: name) }
        guard seconds < Double(Expiration.millisecondsThreshold) else { throw .dateInMilliseconds(key: name) }
        key(name)
        int(Int64(seconds.rounded(.down)))
    }
}
