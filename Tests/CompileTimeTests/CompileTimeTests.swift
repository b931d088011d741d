import Foundation
import Testing

/// Compile-time guarantees, tested: every snippet in `Snippets/MustFail` must fail to typecheck
/// with the diagnostic named on its first line (`// expect: …`), and every snippet in
/// `Snippets/MustCompile` must typecheck cleanly. Each runs
/// `swiftc -typecheck -I <bin>/Modules snippet.swift` against the modules this test run built.
@Suite struct CompileTimeTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
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
        #expect(
            FileManager.default.fileExists(atPath: Self.binPath.appendingPathComponent("Modules/APNs.swiftmodule").path)
        )
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

/// Every Swift sample in the DocC catalog (`Sources/APNs.docc/*.md`) compiles: each block is
/// typechecked inside an `async throws` function after a prelude that declares the names samples
/// take as given (`connector`, `device`, `notification`, …). Not compiled, by rule: a package
/// manifest excerpt (`.package(`), a Swift Testing test (`@Test`, which needs the test
/// framework), a mock-server sample (`MockAPNsServer`, `server.`, which need SwiftNIO's module
/// maps), and a sample that shows a compile error on purpose (`// error:`).
@Suite struct DocumentationSampleTests {
    struct Sample: Sendable, CustomTestStringConvertible {
        var article: String
        var index: Int
        var code: String
        var testDescription: String { "\(article) #\(index)" }
    }

    static let catalog = CompileTimeTests.packageRoot.appendingPathComponent("Sources/APNs.docc")

    static func samples() -> [Sample] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: catalog.path)) ?? []).filter {
            $0.hasSuffix(".md")
        }.sorted()
        var samples: [Sample] = []
        for name in names {
            guard let text = try? String(contentsOf: catalog.appendingPathComponent(name), encoding: .utf8) else {
                continue
            }
            var index = 0
            var current: [Substring]?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                    current = []
                } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                    samples.append(Sample(article: name, index: index, code: current!.joined(separator: "\n")))
                    index += 1
                    current = nil
                } else if current != nil {
                    current!.append(line)
                }
            }
        }
        return samples
    }

    static func isExempt(_ code: String) -> Bool {
        [".package(", "@Test", "MockAPNsServer", "server.", "// error:"].contains { code.contains($0) }
    }

    static let prelude = """
        import APNs
        import APNsTesting
        import Foundation
        import Logging
        import ServiceLifecycle
        import CoreMetrics
        import Tracing
        let deviceToken = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
        let tokenFromTheApp = deviceToken, hex = deviceToken
        let device = try! Device(token: deviceToken)
        let devices = [device], pushToStartDevice = device
        let teamID = "DEF123GHIJ", keyID = "ABC123DEFG", keyPath = "AuthKey_ABC123DEFG.p8", p12Path = "aps.p12", password = "secret"
        let useToken = true
        let connector = try! TokenConnector(teamID: teamID, keyID: keyID, key: .file(path: keyPath), environment: .production)
        let tokenConnector = connector
        let certificateConnector = try! CertificateConnector(pkcs12: .file(path: p12Path), password: password, environment: .production)
        let mdmCertificateConnector = certificateConnector
        let notification = AlertNotification(bundleID: "com.example.app") { Alert("Hi") }
        let eta = Date()
        actor Tokens { func remove(_ device: Device) {} }
        let tokens = Tokens()
        func forget(_ device: Device, unlessRegisteredAfter date: Date?) {}
        func retryLater(_ notification: some PushNotification) {}
        let log = Logger(label: "samples")

        """

    @Test func catalogHasSamples() {
        #expect(Self.samples().count >= 25)
        #expect(Self.samples().filter { !Self.isExempt($0.code) }.count >= 20)
    }

    @Test(arguments: samples().filter { !isExempt($0.code) })
    func sampleCompiles(_ sample: Sample) throws {
        let body = sample.code.split(separator: "\n", omittingEmptySubsequences: false).filter {
            !$0.hasPrefix("import ")
        }
        let source = Self.prelude + "func sample() async throws {\n" + body.joined(separator: "\n") + "\n}\n"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "doc-sample-\(sample.article)-\(sample.index).swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try CompileTimeTests.typecheck(file)
        let errors = result.output.split(separator: "\n").filter { $0.contains("error:") }
        #expect(
            result.status == 0, "\(sample.article) sample \(sample.index):\n\(errors.prefix(5).joined(separator: "\n"))"
        )
    }
}
