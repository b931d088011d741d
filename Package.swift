// swift-tools-version:6.1
import PackageDescription

// Layers (see Sources/APNs.docc/Architecture.md):
//   APNs            one module from two folders: Sources/APNsCore (notifications, payload builders,
//                   rules, the exact request value; no C, no network, which Scripts/check-layers.sh
//                   checks) and Sources/APNs (connectors, JWT signing with libcrypto, the libcurl
//                   HTTP/2 transport, send(_:via:to:)). One module, so that
//                   `swift package generate-documentation --target APNs` documents every public
//                   symbol (the plugin leaves out what a module re-exports from another).
//   APNsTesting     recording connector and credential helpers for users' unit tests.
//   APNsMockServer  a real HTTP/2 + TLS server that behaves like APNs (the only SwiftNIO user).
//   APNsCLI         the `apns` command.
//   APNsBenchmark, APNsSoak, CLibcurlReference
//                   the benchmarks (Benchmarks/, see its README): executables and targets, not
//                   products, so a package that depends on this one never builds them; here they
//                   share the library's build folder, so running them builds no second SwiftNIO.
let package = Package(
    name: "swift-apns",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "APNsTesting", targets: ["APNsTesting"]),
        .library(name: "APNsMockServer", targets: ["APNsMockServer"]),
        .executable(name: "apns", targets: ["APNsCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // `swift package generate-documentation --target APNs` builds Sources/APNs.docc.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // One module from two folders (see the top of this file). The catalog, Sources/APNs.docc,
        // sits beside them: inside a folder listed in `sources` it would be compiled as a source.
        .target(
            name: "APNs",
            dependencies: [
                "CCurl", "CCrypto",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Sources",
            exclude: ["APNsTesting", "APNsMockServer", "APNsCLI", "CCurl", "CCrypto"],
            sources: ["APNsCore", "APNs"]
        ),
        .target(
            name: "APNsTesting",
            dependencies: [
                "APNs", "CCrypto",
                // AwaitableReports: a logger and a metrics factory whose reports a test awaits.
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .target(
            name: "APNsMockServer",
            dependencies: [
                "APNs", "CCrypto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // TLSUserEvent: a handshake's end, when a connection's client certificate is known.
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                // The console's HTTP/1.1 API (MockConsole): NIO's own, no web framework.
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "APNsCLI",
            dependencies: [
                "APNs", "APNsTesting", "APNsMockServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "APNsCoreTests", dependencies: ["APNs"]),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs", "APNsTesting", "APNsMockServer", "TestFixtures",
                "CCurl",  // to ask libcurl's own URL parser what the transport assumes of it
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "APNsCLITests", dependencies: ["APNsCLI", "APNsMockServer", "APNs", "APNsTesting", "TestFixtures"]),
        // The mock server's own tests: how it answers what the library sends, and what it would refuse.
        .testTarget(
            name: "APNsMockServerTests",
            dependencies: [
                "APNs", "APNsMockServer", "TestFixtures",
                // A raw HTTP/2 client that breaks the stream limit, as no well-behaved one can.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]),
        // A running mock server with keys, a client certificate and connectors wired to it, for the
        // library's and the mock server's tests (a target, not a product).
        .target(name: "TestFixtures", dependencies: ["APNs", "APNsMockServer"], path: "Tests/TestFixtures"),
        .executableTarget(
            name: "APNsBenchmark",
            dependencies: [
                "APNs", "APNsMockServer", "CLibcurlReference",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // The far-from-APNs table's SwiftNIO server (NIODelayServer.swift).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Benchmarks/APNsBenchmark"
        ),
        .executableTarget(
            name: "APNsSoak",
            dependencies: [
                "APNs", "APNsMockServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/APNsSoak"
        ),
        // The same requests through a minimal libcurl loop in C: the floor of any libcurl client.
        .target(
            name: "CLibcurlReference",
            path: "Benchmarks/CLibcurlReference",
            linkerSettings: [.linkedLibrary("curl")]
        ),
        .testTarget(
            name: "CompileTimeTests",
            dependencies: ["APNs", "APNsTesting", "TestFixtures"],
            exclude: ["Snippets"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Scripts/sanitizers.sh: APNS_SANITIZER=thread or address compiles this package's own modules with
// that sanitizer (and links its runtime), in the ordinary build folder, and changes nothing else:
// SwiftNIO, BoringSSL and the other dependencies are the ones the plain build already compiled, so
// a sanitizer run rebuilds this repository's code, not the world. The sanitizers watch the code
// this repository writes; what it links was never all instrumented (libcurl, libcrypto and the
// Swift runtime are not). The suites they run are the transport's and the bulk send's, all in
// APNsTests, so only what that target reaches is built: not the command, the benchmarks or the
// other test targets.
if let sanitizer = Context.environment["APNS_SANITIZER"], !sanitizer.isEmpty {
    let sanitized: Set<String> = [
        "CCurl", "CCrypto", "APNs", "APNsTesting", "APNsMockServer", "TestFixtures", "APNsTests",
    ]
    package.targets.removeAll { !sanitized.contains($0.name) }
    package.products.removeAll { $0.name == "apns" }  // APNsCLI's
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
    }
}
