import Foundation
import Testing

/// The library's compile-time rules hold through `app.apns` and `req.apns`: every snippet in
/// `Snippets/MustFail` fails to typecheck with the diagnostic on its first line
/// (`// expect: …`), and every one in `Snippets/MustCompile` typechecks without a warning
/// (`swiftc -typecheck` against the modules this test run built).
@Suite struct CompileTimeTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let snippets = packageRoot.appendingPathComponent("Tests/APNsVaporTests/Snippets")

    static func snippets(in folder: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: snippets.appendingPathComponent(folder).path))
        return (names ?? []).filter { $0.hasSuffix(".swift") }.sorted()
    }

    /// The build's products folder: the test bundle lives in it.
    static var binPath: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// The C modules a snippet importing Vapor and APNs needs: the library's (`../Sources`), those
    /// SwiftPM generated beside the products, and those the checkouts ship in `include/`.
    static let moduleMaps: [String] = {
        let files = FileManager.default
        var maps = ["CCurl", "CCrypto"].map {
            packageRoot.deletingLastPathComponent().appendingPathComponent("Sources/\($0)/module.modulemap").path
        }
        for entry in (try? files.contentsOfDirectory(atPath: binPath.path)) ?? [] where entry.hasSuffix(".build") {
            let map = binPath.appendingPathComponent(entry).appendingPathComponent("module.modulemap").path
            if files.fileExists(atPath: map) { maps.append(map) }
        }
        let checkouts = binPath.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "checkouts")
        for package in (try? files.contentsOfDirectory(atPath: checkouts.path)) ?? [] {
            let sources = checkouts.appendingPathComponent(package).appendingPathComponent("Sources")
            for target in (try? files.contentsOfDirectory(atPath: sources.path)) ?? [] {
                let map = sources.appendingPathComponent(target).appendingPathComponent("include/module.modulemap").path
                if files.fileExists(atPath: map) { maps.append(map) }
            }
        }
        return maps
    }()

    static func typecheck(_ file: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["swiftc", "-typecheck", "-swift-version", "6", "-I", binPath.appendingPathComponent("Modules").path]
            + moduleMaps.flatMap { ["-Xcc", "-fmodule-map-file=" + $0] } + [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func suiteIsPopulated() {
        #expect(Self.snippets(in: "MustFail").count >= 4)
        #expect(Self.snippets(in: "MustCompile").count >= 1)
    }

    @Test(arguments: snippets(in: "MustFail"))
    func mustNotCompile(_ name: String) throws {
        let file = Self.snippets.appendingPathComponent("MustFail").appendingPathComponent(name)
        let source = try String(contentsOf: file, encoding: .utf8)
        let firstLine = source.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        let expected = try #require(
            firstLine.hasPrefix("// expect: ") ? String(firstLine.dropFirst("// expect: ".count)) : nil,
            "\(name) must start with // expect: <diagnostic>")
        let result = try Self.typecheck(file)
        #expect(result.status != 0, "\(name) compiled but must not")
        let errors = result.output.split(separator: "\n").filter { $0.contains("error:") || $0.contains("note:") }
        #expect(
            errors.contains { $0.contains(expected) },
            "\(name): expected «\(expected)», got:\n\(errors.prefix(6).joined(separator: "\n"))")
    }

    @Test(arguments: snippets(in: "MustCompile"))
    func mustCompile(_ name: String) throws {
        let result = try Self.typecheck(
            Self.snippets.appendingPathComponent("MustCompile").appendingPathComponent(name))
        #expect(result.status == 0, "\(name) must compile:\n\(result.output.prefix(2000))")
        #expect(!result.output.contains("warning:"), "\(name) has warnings:\n\(result.output.prefix(2000))")
    }
}
