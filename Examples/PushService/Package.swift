// swift-tools-version:6.1
import PackageDescription

// A small push service, as a team would run it: Hummingbird serves `POST /notify` for alert,
// background and VoIP pushes and Prometheus metrics at `/metrics`; the connector comes from
// environment variables; swift-service-lifecycle runs the server and the connector and stops both
// gracefully on SIGTERM. It also imports APNs beside Hummingbird, swift-http-types and NIO, as real
// services do, and must build with no ambiguous names (`--check-names`). CI builds it and runs one
// request end to end (run-with-mock.sh --smoke).
let package = Package(
    name: "PushService",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-apns", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "PushService",
            dependencies: [
                .product(name: "APNs", package: "swift-apns"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
