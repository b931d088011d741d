import APNs

func dryRun(_ notification: some PushNotification, to device: Device) throws -> String {
    try notification.request(to: device).description
}

func both(device: Device) throws -> [String] {
    [
        try dryRun(AlertNotification(bundleID: "com.example.app") { Alert("Hi") }, to: device),
        try dryRun(BackgroundNotification(bundleID: "com.example.app"), to: device),
    ]
}
