/// The sound played with the alert (`sound`): a file in the app bundle, the default sound, or a
/// critical alert sound with a volume.
///
/// ```swift
/// AlertNotification(bundleID: "com.example.app") { Alert("Ding"); Sound("bingbong.aiff") }
/// AlertNotification(bundleID: "com.example.app") { Alert("Ding"); Sound.default }
/// AlertNotification(bundleID: "com.example.app") { Alert("Fire alarm"); Sound.critical("alarm.caf", volume: 0.9) }
/// ```
public struct Sound: AlertNotificationComponent, Hashable, Sendable {
    /// The sound file in the app bundle, or `default`.
    public let name: String
    /// Set for critical alerts: the volume from 0 to 1.
    public let criticalVolume: Double?

    /// A sound file in the app bundle or `Library/Sounds`.
    public init(_ name: String) {
        self.name = name
        criticalVolume = nil
    }

    private init(name: String, criticalVolume: Double?) {
        self.name = name
        self.criticalVolume = criticalVolume
    }

    /// The system's default sound.
    public static let `default` = Sound("default")

    /// A critical alert sound (`{"critical":1,"name":…,"volume":…}`); needs Apple's entitlement.
    public static func critical(_ name: String = "default", volume: Double = 1) -> Sound {
        Sound(name: name, criticalVolume: volume)
    }

    /// Adds this component to the payload being built; the result builder calls it.
    public func apply(to payload: inout AlertPayload) { payload.set(\.sound, self, name: "Sound") }

    func validate() throws(APNsValidationError) {
        guard let criticalVolume else { return }
        guard criticalVolume.isFinite else { throw .nonFiniteNumber(path: "aps.sound.volume") }
        guard (0...1).contains(criticalVolume) else { throw .criticalVolumeOutOfRange(criticalVolume) }
    }

    func write(to writer: inout JSONWriter) {
        guard let criticalVolume else { return writer.string(name) }
        writer.beginObject()
        writer.literalKey("critical"); writer.int(1)
        writer.literalKey("name"); writer.string(name)
        writer.literalKey("volume"); writer.double(criticalVolume)
        writer.endObject()
    }
}
