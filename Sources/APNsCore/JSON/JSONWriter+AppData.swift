extension JSONWriter {
    /// Writes the keys of `appData` into the object being written (beside `aps`), in the order its
    /// `encode(to:)` writes them, with `JSONEncoder`'s default strategies (see ``AppDataEncoder``).
    ///
    /// - Throws: ``APNsValidationError/reservedAppDataKey(_:)`` if app data writes `aps`,
    ///   ``APNsValidationError/appDataNotAnObject`` if it is not a keyed container,
    ///   ``APNsValidationError/nonFiniteNumber(path:)`` for NaN or infinity.
    mutating func appData<AppData: Encodable>(_ appData: AppData, reservedKeys: Set<String> = ["aps"]) throws(APNsValidationError) {
        if AppData.self == NoAppData.self { return }
        if let raw = appData as? RawJSONObject { return rawMembers(raw.members) }
        let node: AppDataEncoder.Node
        do {
            node = try AppDataEncoder.encode(appData)
        } catch {
            switch error {
            case .nonFinite(let path): throw .nonFiniteNumber(path: path)
            case .other(let message): throw .appDataEncodingFailed(message)
            }
        }
        guard case .object(let entries) = node else { throw .appDataNotAnObject }
        for entry in entries {
            if reservedKeys.contains(entry.key) { throw .reservedAppDataKey(entry.key) }
            key(entry.key)
            entry.value.write(to: &self)
        }
    }
}
