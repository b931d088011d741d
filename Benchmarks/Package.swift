// swift-tools-version:6.1
import PackageDescription

// swift-apns' benchmarks, a package of their own so that the library's `swift build` builds only
// what users get (see Benchmarks/README.md):
//   APNsBenchmark      throughput, CPU, latency, memory and pools against the mock server, beside
//                      libcurl alone (CLibcurlReference) and h2load
//   APNsSoak           a long run with injected faults: outcomes, duplicates, memory
//   CLibcurlReference  the same requests through a minimal libcurl multi loop in C
let package = Package(
    name: "APNsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-apns", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "APNsBenchmark",
            dependencies: [
                .product(name: "APNs", package: "swift-apns"),
                .product(name: "APNsMockServer", package: "swift-apns"),
                "CLibcurlReference", "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "APNsBenchmark"
        ),
        .executableTarget(
            name: "APNsSoak",
            dependencies: [
                .product(name: "APNs", package: "swift-apns"),
                .product(name: "APNsMockServer", package: "swift-apns"),
                "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "APNsSoak"
        ),
        .target(name: "BenchmarkSupport", path: "BenchmarkSupport"),
        // The same requests through a minimal libcurl loop in C: the floor of any libcurl client.
        .target(
            name: "CLibcurlReference",
            path: "CLibcurlReference",
            linkerSettings: [.linkedLibrary("curl")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
