extension JSONWriter {
    /// The root key app data may not write beside `aps`.
    static let apsReserved: Set<String> = ["aps"]

    /// Writes the keys of `appData` into the object being written (beside `aps`), in the order its
    /// `encode(to:)` writes them, with `JSONEncoder`'s default strategies (see ``AppDataEncoder``).
    ///
    /// - Throws: ``APNsValidationError/reservedAppDataKey(_:)`` if app data writes `aps`,
    ///   ``APNsValidationError/appDataNotAnObject`` if it is not a keyed container,
    ///   ``APNsValidationError/nonFiniteNumber(path:)`` for NaN or infinity.
    mutating func appData<AppData: Encodable>(
        _ appData: AppData, reservedKeys: Set<String> = JSONWriter.apsReserved, encoding: AppDataEncoding = .default
    ) throws(APNsValidationError) {
        if AppData.self == NoAppData.self { return }
        if let raw = appData as? RawJSONObject { return rawMembers(raw.members) }
        // Fast path first (default strategies only); on anything unusual, start over with the tree encoder.
        if encoding == .default {
            let mark = checkpoint()
            do {
                try StreamingEncoder.writeMembers(of: appData, into: &self, reservedKeys: reservedKeys)
                return
            } catch {
                rewind(to: mark)
            }
        }
        let isObject: Bool
        do {
            isObject = try AppDataEncoder.writeMembers(
                of: appData, into: &self, reservedKeys: reservedKeys, options: encoding)
        } catch {
            switch error {
            case .nonFinite(let path): throw .nonFiniteNumber(path: path)
            case .reserved(let key): throw .reservedAppDataKey(key)
            case .other(let message): throw .appDataEncodingFailed(message)
            }
        }
        guard isObject else { throw .appDataNotAnObject }
    }
}
