// swift-tools-version:6.1
import PackageDescription

// A service that imports APNs beside Hummingbird, swift-http-types and NIO, as real services do:
// it must build with no ambiguous names (issue 11). CI builds it.
let package = Package(
    name: "HummingbirdConsumer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-apns", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdConsumer",
            dependencies: [
                .product(name: "APNs", package: "swift-apns"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
