import Foundation
import TestFixtures
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

    /// The C modules of the dependencies (SwiftNIO's, swift-crypto's, swift-atomics'…), which a
    /// snippet importing `APNsMockServer` needs: those SwiftPM generated beside the build's
    /// products, and those the checkouts ship in `include/`.
    static let dependencyModuleMaps: [String] = {
        let files = FileManager.default
        var maps: [String] = []
        for entry in (try? files.contentsOfDirectory(atPath: binPath.path)) ?? [] where entry.hasSuffix(".build") {
            let map = binPath.appendingPathComponent(entry).appendingPathComponent("module.modulemap").path
            if files.fileExists(atPath: map) { maps.append(map) }
        }
        // <scratch>/<triple>/debug → <scratch>/checkouts
        let checkouts = binPath.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "checkouts")
        for package in (try? files.contentsOfDirectory(atPath: checkouts.path)) ?? [] {
            let sources = checkouts.appendingPathComponent(package).appendingPathComponent("Sources")
            for target in (try? files.contentsOfDirectory(atPath: sources.path)) ?? [] {
                let map = sources.appendingPathComponent(target).appendingPathComponent("include/module.modulemap").path
                if files.fileExists(atPath: map) { maps.append(map) }
            }
        }
        return maps.sorted()
    }()

    static func typecheck(_ file: URL) throws -> (status: Int32, output: String) {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "swiftc", "-typecheck", "-swift-version", "6",
                "-I", binPath.appendingPathComponent("Modules").path,
                "-Xcc",
                "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CCurl/module.modulemap").path,
                "-Xcc",
                "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CCrypto/module.modulemap").path,
            ] + dependencyModuleMaps.flatMap { ["-Xcc", "-fmodule-map-file=" + $0] } + [file.path]
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

/// Every Swift sample in the DocC catalog (`Sources/APNs.docc/*.md`) and in `README.md` is complete
/// and compiles.
///
/// - A sample is typechecked inside an `async throws` function after a prelude that declares the
///   names samples take as given (``DocumentationSampleTests/givenNames``: `connector`, `device`,
///   `notification`, …). A sample that declares a Swift Testing test (`@Test`) is typechecked at
///   file scope with its imports only.
/// - Complete, as a reader sees it: a given name a sample uses without declaring it is declared by
///   an earlier sample of the same article or named in the article's text (in backticks).
/// - A sample that shows a compile error on purpose (`// error: <diagnostic>`) must fail to
///   typecheck with that diagnostic.
/// - Skipped, each by its reason (``DocumentationSampleTests/skipReason(_:)``): a package manifest
///   excerpt, which SwiftPM compiles against `PackageDescription`, not swiftc against the library
///   (Scripts/check-adoption.sh builds the manifests of Getting Started and Testing); the
///   Hummingbird article's excerpts of Examples/PushService, which are checked against its source.
@Suite struct DocumentationSampleTests {
    struct Sample: Sendable, CustomTestStringConvertible {
        var article: String
        var index: Int
        var code: String
        /// The article's text outside its code blocks.
        var prose: String
        /// What the article's earlier samples declare.
        var declaredBefore: Set<String>
        var testDescription: String { "\(article) #\(index)" }
    }

    static let catalog = CompileTimeTests.packageRoot.appendingPathComponent("Sources/APNs.docc")

    static func samples() -> [Sample] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: catalog.path)) ?? []).filter {
            $0.hasSuffix(".md")
        }.sorted()
        // The README's samples are the first a reader pastes: checked the same way.
        let files =
            names.map { (name: $0, url: catalog.appendingPathComponent($0)) } + [
                (name: "README.md", url: CompileTimeTests.packageRoot.appendingPathComponent("README.md"))
            ]
        var samples: [Sample] = []
        for (name, url) in files {
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { continue }
            var blocks: [String] = []
            var prose: [Substring] = []
            var current: [Substring]?
            var inOtherBlock = false
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if current == nil, !inOtherBlock, trimmed == "```swift" {
                    current = []
                } else if current != nil, trimmed == "```" {
                    blocks.append(current!.joined(separator: "\n"))
                    current = nil
                } else if current != nil {
                    current!.append(line)
                } else if trimmed.hasPrefix("```") {
                    inOtherBlock.toggle()
                } else if !inOtherBlock {
                    prose.append(line)
                }
            }
            var declared: Set<String> = []
            for (index, code) in blocks.enumerated() {
                samples.append(
                    Sample(
                        article: name, index: index, code: code, prose: prose.joined(separator: "\n"),
                        declaredBefore: declared))
                declared.formUnion(declarations(in: code))
            }
        }
        return samples
    }

    /// Why a sample is not typechecked, or nil.
    static func skipReason(_ sample: Sample) -> String? {
        if sample.code.contains(".package(") {
            return
                "a package manifest excerpt: SwiftPM compiles it against PackageDescription, not swiftc against the library"
        }
        if sample.article == hummingbirdArticle {
            return "an excerpt of Examples/PushService, which CI builds: checked against its source instead"
        }
        return nil
    }

    /// The article whose samples are excerpts of `Examples/PushService` (they need Hummingbird,
    /// which this package does not depend on).
    static let hummingbirdArticle = "Hummingbird.md"
    static let pushService = CompileTimeTests.packageRoot.appendingPathComponent(
        "Examples/PushService/Sources/PushService/main.swift")

    /// A sample's lines, trimmed, stand in `source` one after another, blank lines aside.
    static func isExcerpt(_ code: String, of source: String) -> Bool {
        func lines(_ text: String) -> [String] {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let excerpt = lines(code), whole = lines(source)
        guard !excerpt.isEmpty, excerpt.count <= whole.count else { return false }
        return (0...(whole.count - excerpt.count)).contains { Array(whole[$0..<($0 + excerpt.count)]) == excerpt }
    }

    /// The diagnostic a sample that must not compile names (`// error: …`), or nil.
    static func expectedError(_ code: String) -> String? {
        guard let marker = code.range(of: "// error: ") else { return nil }
        return String(code[marker.upperBound...].prefix { $0 != "\n" }).trimmingCharacters(in: .whitespaces)
    }

    /// The names a sample declares (`let`, `var`, `func`, `actor`, `struct`, and each name of a
    /// `let a = …, b = …` list).
    static func declarations(in code: String) -> Set<String> {
        var names: Set<String> = []
        let words = code.split { !($0.isLetter || $0.isNumber || $0 == "_") }
        for (index, word) in words.enumerated().dropLast()
        where ["let", "var", "func", "actor", "struct", "class", "enum"].contains(word) {
            names.insert(String(words[index + 1]))
        }
        return names
    }

    /// `code` without its comments and the contents of its string literals (plain and raw).
    static func withoutLiteralsAndComments(_ code: String) -> String {
        var result = ""
        var rest = Substring(code)
        while let first = rest.first {
            if rest.hasPrefix("//") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("#\"") {
                rest = rest.dropFirst(2)
                if let end = rest.range(of: "\"#") { rest = rest[end.upperBound...] } else { rest = "" }
                result += "\"\""
            } else if first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.first, character != "\"" {
                    rest = rest.dropFirst(character == "\\" ? 2 : 1)
                }
                rest = rest.dropFirst()
                result += "\"\""
            } else {
                result.append(first)
                rest = rest.dropFirst()
            }
        }
        return result
    }

    /// Whether `code` uses `name` as a value: a whole word, not a member (`.name`), not an argument
    /// label (`name:`).
    static func uses(_ name: String, in code: String) -> Bool {
        func isWord(_ character: Character?) -> Bool {
            character.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false
        }
        for range in code.ranges(of: name) {
            let before = range.lowerBound == code.startIndex ? nil : code[code.index(before: range.lowerBound)]
            let after = code[range.upperBound...].first
            let next = code[range.upperBound...].first { $0 != " " }
            if !isWord(before), before != ".", !isWord(after), next != ":" { return true }
        }
        return false
    }

    /// The names samples may take as given, each declared by ``prelude``.
    static let givenNames: [String] = [
        "deviceToken", "tokenFromTheApp", "hex", "device", "devices", "pushToStartDevice", "teamID", "keyID",
        "keyPath", "p12Path", "password", "useToken", "connector", "tokenConnector", "certificateConnector",
        "mdmCertificateConnector", "notification", "eta", "tokens", "forget", "retryLater", "log", "server", "id",
    ]

    static let imports = """
        import APNs
        import APNsMockServer
        import APNsTesting
        import CoreMetrics
        import Foundation
        import Logging
        import ServiceLifecycle
        import Testing
        import Tracing

        """

    /// Typechecked only, never run: `given()` stands for a value the reader already has.
    static let prelude =
        imports + """
            func given<T>() -> T { fatalError("typechecked only") }
            let deviceToken = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
            let tokenFromTheApp = deviceToken, hex = deviceToken
            let device: Device = given(), devices: [Device] = given(), pushToStartDevice: Device = given()
            let teamID = "DEF123GHIJ", keyID = "ABC123DEFG", keyPath = "AuthKey_ABC123DEFG.p8", p12Path = "aps.p12"
            let password = "secret", useToken = true
            let connector: TokenConnector = given(), tokenConnector: TokenConnector = given()
            let certificateConnector: CertificateConnector = given(), mdmCertificateConnector: CertificateConnector = given()
            let notification = AlertNotification(bundleID: "com.example.app") { Alert("Hi") }
            let eta = Date()
            actor Tokens { func remove(_ device: Device) {} }
            let tokens = Tokens()
            func forget(_ device: Device, unlessRegisteredAfter date: Date?) {}
            func retryLater(_ notification: some PushNotification) {}
            let log = Logger(label: "samples")
            let server: MockAPNsServer = given(), id = APNsID()

            """

    static func source(of sample: Sample) -> String {
        let body = sample.code.split(separator: "\n", omittingEmptySubsequences: false).filter {
            !$0.hasPrefix("import ")
        }.joined(separator: "\n")
        return sample.code.contains("@Test")
            ? imports + body + "\n" : prelude + "func sample() async throws {\n" + body + "\n}\n"
    }

    static func typecheck(_ sample: Sample) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "doc-sample-\(sample.article)-\(sample.index).swift")
        try source(of: sample).write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try CompileTimeTests.typecheck(file)
    }

    @Test func catalogHasSamples() {
        let samples = Self.samples()
        #expect(samples.count >= 30)
        // Every skip is named by its reason: the manifest excerpts in Getting Started, the README and Testing.
        #expect(
            samples.filter { Self.skipReason($0) != nil && $0.article != Self.hummingbirdArticle }.map(
                \.testDescription)
                == ["GettingStarted.md #0", "Testing.md #0", "README.md #1"])
        #expect(samples.filter { Self.expectedError($0.code) != nil }.count >= 1)
    }

    @Test func hummingbirdSamplesAreTheExampleService() throws {
        let source = try String(contentsOf: Self.pushService, encoding: .utf8)
        let excerpts = Self.samples().filter { $0.article == Self.hummingbirdArticle }
        #expect(excerpts.count >= 3)
        for sample in excerpts {
            #expect(
                Self.isExcerpt(sample.code, of: source), "\(sample.testDescription) is not in \(Self.pushService.path)")
        }
        #expect(!Self.isExcerpt("let group = ServiceGroup(\nnot in the source", of: source))
    }

    @Test(arguments: samples().filter { skipReason($0) == nil && expectedError($0.code) == nil })
    func sampleCompiles(_ sample: Sample) throws {
        let result = try Self.typecheck(sample)
        let errors = result.output.split(separator: "\n").filter { $0.contains("error:") }
        #expect(
            result.status == 0, "\(sample.article) sample \(sample.index):\n\(errors.prefix(5).joined(separator: "\n"))"
        )
    }

    @Test(arguments: samples().filter { skipReason($0) == nil && expectedError($0.code) != nil })
    func sampleFailsAsItSays(_ sample: Sample) throws {
        let expected = try #require(Self.expectedError(sample.code))
        let result = try Self.typecheck(sample)
        #expect(result.status != 0, "\(sample.article) sample \(sample.index) compiles; it says it does not")
        #expect(
            result.output.contains(expected),
            "\(sample.article) sample \(sample.index) does not fail with \"\(expected)\":\n\(result.output.prefix(1500))"
        )
    }

    @Test(arguments: samples().filter { skipReason($0) == nil })
    func sampleIsComplete(_ sample: Sample) {
        let declared = Self.declarations(in: sample.code).union(sample.declaredBefore)
        let unexplained = Self.givenNames.filter {
            Self.uses($0, in: Self.withoutLiteralsAndComments(sample.code)) && !declared.contains($0)
                && !sample.prose.contains("`\($0)`")
        }
        #expect(
            unexplained.isEmpty,
            "\(sample.article) sample \(sample.index) uses \(unexplained) without declaring them or naming them in the article's text"
        )
    }
}
