import Foundation
import Testing

/// Compile-time guarantees, tested: every snippet in `Snippets/MustFail` must fail to typecheck
/// with the diagnostic named on its first line (`// expect: …`), and every snippet in
/// `Snippets/MustCompile` must typecheck cleanly. Each runs
/// `swiftc -typecheck -I <bin>/Modules snippet.swift` against the modules this test run built.
@Suite struct CompileTimeTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let snippets = packageRoot.appendingPathComponent("Tests/CompileTimeTests/Snippets")

    static func snippets(in folder: String) -> [String] {
        let directory = snippets.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".swift") }.sorted()
    }

    /// The build's products folder: the test bundle lives in it.
    static var binPath: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    static func typecheck(_ file: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swiftc", "-typecheck", "-swift-version", "6",
            "-I", binPath.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CCurl/module.modulemap").path,
            "-Xcc", "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CCrypto/module.modulemap").path,
            file.path,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func suiteIsPopulated() {
        #expect(Self.snippets(in: "MustFail").count >= 40)
        #expect(Self.snippets(in: "MustCompile").count >= 25)
        #expect(FileManager.default.fileExists(atPath: Self.binPath.appendingPathComponent("Modules/APNs.swiftmodule").path))
    }

    @Test(arguments: snippets(in: "MustFail"))
    func mustNotCompile(_ name: String) throws {
        let file = Self.snippets.appendingPathComponent("MustFail").appendingPathComponent(name)
        let source = try String(contentsOf: file, encoding: .utf8)
        let firstLine = source.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        let expected = try #require(firstLine.hasPrefix("// expect: ") ? String(firstLine.dropFirst("// expect: ".count)) : nil,
                                    "\(name) must start with // expect: <diagnostic>")
        let result = try Self.typecheck(file)
        #expect(result.status != 0, "\(name) compiled but must not")
        let errors = result.output.split(separator: "\n").filter { $0.contains("error:") || $0.contains("note:") }
        #expect(errors.contains { $0.contains(expected) }, "\(name): expected «\(expected)», got:\n\(errors.prefix(6).joined(separator: "\n"))")
    }

    @Test(arguments: snippets(in: "MustCompile"))
    func mustCompile(_ name: String) throws {
        let result = try Self.typecheck(Self.snippets.appendingPathComponent("MustCompile").appendingPathComponent(name))
        #expect(result.status == 0, "\(name) must compile:\n\(result.output.prefix(2000))")
        #expect(!result.output.contains("warning:"), "\(name) has warnings:\n\(result.output.prefix(2000))")
    }
}
