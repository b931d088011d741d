// swift-tools-version:6.1
import PackageDescription

// swift-apns for Vapor 4: `app.apns` holds named connectors made once and shut down with the
// application; `req.apns.send(…)` sends the library's typed notifications under the same
// compile-time rules; an `APNsError` thrown from a route becomes an HTTP status. Its own package,
// so that the library's users never fetch Vapor. `VaporNotify` is a small app that uses it.
let package = Package(
    name: "swift-apns-vapor",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "APNsVapor", targets: ["APNsVapor"]),
        .executable(name: "VaporNotify", targets: ["VaporNotify"]),
    ],
    dependencies: [
        .package(name: "swift-apns", path: ".."),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
    ],
    targets: [
        .target(
            name: "APNsVapor",
            dependencies: [
                .product(name: "APNs", package: "swift-apns"),
                .product(name: "Vapor", package: "vapor"),
            ]
        ),
        // The example app's routes (a target of its own so the tests can call `configure`).
        .target(
            name: "NotifyApp",
            dependencies: ["APNsVapor", .product(name: "Vapor", package: "vapor")]
        ),
        .executableTarget(
            name: "VaporNotify",
            dependencies: ["NotifyApp", .product(name: "Vapor", package: "vapor")]
        ),
        .testTarget(
            name: "APNsVaporTests",
            dependencies: [
                "APNsVapor", "NotifyApp",
                .product(name: "VaporTesting", package: "vapor"),
                .product(name: "APNsMockServer", package: "swift-apns"),
            ],
            exclude: ["Snippets"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
