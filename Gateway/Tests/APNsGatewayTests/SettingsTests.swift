import APNsGateway
import Foundation
import Testing

/// `apns-gateway` settings from a configuration file and the environment: flags before
/// environment before file before defaults, every `serve` option settable, and a file with an
/// unknown key, a mistyped value or a secret refused with what is wrong.
@Suite struct SettingsTests {
    /// Runs the built `apns-gateway` to its end; its exit status, standard output and error.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String, String) {
        let process = TestProcess()
        process.executableURL = CrashSafetyTests.binary
        process.arguments = arguments
        // Only what the test gives, so no APNS_GATEWAY_ variable of the caller's leaks in.
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let error = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, out, error)
    }

    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func write(_ json: String, in folder: URL) throws -> String {
        let file = folder.appendingPathComponent("apns-gateway-\(UUID().uuidString.prefix(8)).json")
        try json.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// The lease check (the first thing `serve` does) reports the lease it was given: the file's,
    /// then the environment's over it, then the flag's over both.
    @Test func flagsComeBeforeTheEnvironmentAndTheEnvironmentBeforeTheFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try Self.write(#"{"lease-seconds": 5, "timeout": 10, "port": 0}"#, in: folder)
        for (arguments, environment, lease) in [
            (["serve", "--config", file], [String: String](), 5),
            (["serve", "--config", file], ["APNS_GATEWAY_LEASE_SECONDS": "6"], 6),
            (["serve", "--config", file, "--lease-seconds", "7"], ["APNS_GATEWAY_LEASE_SECONDS": "6"], 7),
            (["serve"], ["APNS_GATEWAY_CONFIG": file, "APNS_GATEWAY_TIMEOUT": "9"], 5),
        ] {
            let (status, _, error) = try Self.run(arguments, environment: environment)
            #expect(status == 64, "\(arguments) \(environment)")
            #expect(error.contains("a lease of \(lease) s is shorter than the send timeout"), "\(error)")
        }
        // The environment's timeout (9 s) over the file's (10 s).
        let (_, _, error) = try Self.run(
            ["serve"], environment: ["APNS_GATEWAY_CONFIG": file, "APNS_GATEWAY_TIMEOUT": "9"])
        #expect(error.contains("the send timeout (9 s)"), "\(error)")
    }

    /// Every long option of `serve --help` can be set in the file (each value reaches the parser:
    /// the run ends at the lease check, after every option was read), and nothing else.
    @Test func everyServeOptionIsSettableInTheFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let values: [String: String] = [
            "database": #""\#(folder.path)/queue.sqlite""#, "database-wait-seconds": "5", "database-connections": "4",
            "database-password-file": #""/nonexistent/db-password""#,
            "host": #""127.0.0.1""#,
            "port": "0", "key-file": #""/nonexistent/AuthKey.p8""#, "key-id": #""KEY0000001""#,
            "team-id": #""TEAM000001""#, "p12": #""/nonexistent/cert.p12""#, "password-env": #""P12_PASSWORD""#,
            "production": "true", "apns-host": #""127.0.0.1:9""#, "ca-file": #""/nonexistent/ca.pem""#,
            "proxy": #""direct""#, "proxy-password-env": #""PROXY_PASSWORD""#, "max-devices": "10",
            "max-queue-depth": "100", "instance": #""settings-test""#, "lease-seconds": "3", "timeout": "2.5",
            "max-age-seconds": "3600", "retention-days": "1.5", "at-most-once-group": "50", "at-most-once-groups": "2",
            "memory-trim-seconds": "5", "additional-connections-when-slow": "0",
            "credential-key-file": #""/nonexistent/kek""#,
            "credential-key-env": #""GATEWAY_KEK""#, "log-level": #""debug""#, "log-format": #""json""#,
            "access-log": "true", "otlp-endpoint": #""http://127.0.0.1:4318/v1/traces""#,
            "otlp-protocol": #""http/json""#,
        ]
        let (_, help, _) = try Self.run(["serve", "--help"])
        // The options as the help lists them: each line that starts with one.
        let options = Set(
            help.split(separator: "\n").compactMap { line -> String? in
                let first = line.split(separator: " ").first ?? ""
                return first.hasPrefix("--") ? String(first.dropFirst(2)) : nil
            }
        ).subtracting(["config"])
        #expect(options == Set(values.keys), "serve --help: \(options.sorted())")
        let file = try Self.write(
            "{" + values.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}",
            in: folder)
        let (status, _, error) = try Self.run(["serve", "--config", file])
        #expect(status == 64)
        #expect(error.contains("a lease of 3 s is shorter than the send timeout (2.5 s)"), "\(error)")
    }

    /// `warn` is taken for `warning` (it used to become `info` silently); a level that is none
    /// exits 64 with the levels there are, before anything is opened.
    @Test func aLogLevelIsOneOfSwiftLogsOrWarnAndNothingElse() throws {
        let (status, _, error) = try Self.run(["serve", "--log-level", "loud", "--database", "/nonexistent/q.sqlite"])
        #expect(status == 64)
        #expect(
            error.contains(
                "--log-level loud is not a level: give trace, debug, info, notice, warning (or warn), error or critical"
            ),
            "\(error)")
        for level in ["warn", "WARNING", "critical"] {
            // Past the level, the next check refuses the lease: the level was taken.
            let (status, _, error) = try Self.run(["serve", "--log-level", level, "--lease-seconds", "3"])
            #expect(status == 64)
            #expect(error.contains("a lease of 3 s is shorter than the send timeout"), "\(level): \(error)")
        }
    }

    /// The database options: a pool size out of range, an sslmode libpq does not have, a root
    /// certificate that is not there, each exit 64 with what to give, before any connection.
    @Test func databaseSettingsThatCannotBeUsedExit64() throws {
        let url = "postgres://gateway@127.0.0.1:9/queue"
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let passwordFile = folder.appendingPathComponent("db-password").path
        try "s3cret\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let emptyFile = folder.appendingPathComponent("empty").path
        try "\n".write(toFile: emptyFile, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (
                ["--database", url, "--database-password-file", "/nonexistent/db-password"],
                "--database-password-file /nonexistent/db-password cannot be read"
            ),
            (
                ["--database", url, "--database-password-file", emptyFile],
                "--database-password-file \(emptyFile) is empty"
            ),
            (
                [
                    "--database", "postgres://gateway:0therPW@127.0.0.1:9/queue", "--database-password-file",
                    passwordFile,
                ],
                "the URL has a password and the password file gives one: give the URL without it"
            ),
            (
                [
                    "--database", folder.appendingPathComponent("q.sqlite").path, "--database-password-file",
                    passwordFile,
                ],
                "--database-password-file is for a PostgreSQL --database"
            ),
            (
                ["--database", url, "--database-connections", "0"],
                "--database-connections 0 must be between 1 and 1000"
            ),
            (
                ["--database", url + "?sslmode=verify-everything"],
                "sslmode=verify-everything is not one of disable, prefer, require, verify-ca, verify-full"
            ),
            (
                ["--database", url + "?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"],
                "sslrootcert=/nonexistent/ca.pem cannot be read"
            ),
        ]
        for (arguments, message) in cases {
            let (status, _, error) = try Self.run(["list-keys"] + arguments)
            #expect(status == 64, "\(arguments): \(error)")
            #expect(error.contains(message), "\(arguments): \(error)")
            #expect(!error.contains("s3cret") && !error.contains("0therPW"), "\(arguments): \(error)")
        }
    }

    /// A password from `--database-password-file` goes into the URL the store reads, whatever
    /// characters it holds, and a URL that has one already is refused rather than overridden.
    @Test func aPasswordFromAFileReachesTheDatabaseURLIntact() throws {
        for password in ["s3cret", "p@ss:w/rd?#%&=+ ", "pässwörd", "a+b/c=="] {
            let url = try PostgresStore.url(
                "postgres://gateway@db.example:5433/queue?sslmode=require", password: password)
            let components = try #require(URLComponents(string: url))
            #expect(components.password == password, "\(url)")
            #expect(components.user == "gateway" && components.host == "db.example" && components.port == 5433)
            #expect(components.path == "/queue" && components.query == "sslmode=require")
        }
        #expect(throws: StoreError.self) {
            try PostgresStore.url("postgres://gateway:mine@db.example/queue", password: "other")
        }
        #expect(throws: StoreError.self) { try PostgresStore.url("/var/lib/queue.sqlite", password: "other") }
    }

    @Test func theBodyLimitMakesRoomForTheDevicesAllowed() {
        #expect(GatewayAPI.Configuration.bodyBytes(forDevices: 5_000) == 1 << 20)
        // 100,000 tokens of 64 hex digits, quoted, with commas, and a notification of 60 KiB.
        let devices = 100_000
        let body = 2 + devices * 67 + 60 << 10
        #expect(GatewayAPI.Configuration.bodyBytes(forDevices: devices) >= body)
        #expect(GatewayAPI.Configuration.bodyBytes(forDevices: .max) > 1 << 20)
    }

    @Test func aFileOrVariableThatCannotBeUsedIsRefusedWithWhatIsWrong() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases: [(String, [String: String], String)] = [
            (
                #"{"lease-second": 5}"#, [:],
                "lease-second is not an option; the keys are the long options of `apns-gateway serve --help`, without their dashes"
            ),
            (#"{"lease-seconds": "5"}"#, [:], "lease-seconds must be a whole number"),
            (#"{"lease-seconds": 5.5}"#, [:], "lease-seconds must be a whole number"),
            (#"{"production": 1}"#, [:], "production must be true or false"),
            (#"["port"]"#, [:], "is not a JSON object of options"),
            (
                #"{"database": "postgres://gateway:s3cret@db.example.com/gateway"}"#, [:],
                "database holds a password, and the configuration file holds no secrets: give this URL by environment instead (APNS_GATEWAY_DATABASE"
            ),
            (
                #"{"proxy": "http://user:s3cret@proxy.example.com:3128"}"#, [:],
                "proxy holds a password, and the configuration file holds no secrets: give the URL without it and the password by --proxy-password-env"
            ),
            ("{}", ["APNS_GATEWAY_PORT": "eighty"], "APNS_GATEWAY_PORT=eighty is not a whole number"),
            (#"{"at-most-once-group": 0}"#, [:], "--at-most-once-group 0 must be between 1 and 2000 (a claim's size)"),
            ("{}", ["APNS_GATEWAY_AT_MOST_ONCE_GROUPS": "65"], "--at-most-once-groups 65 must be between 1 and 64"),
            (
                #"{"memory-trim-seconds": 0.5}"#, [:],
                "--memory-trim-seconds 0.5 must be 0 (off) or between 1 and 86400"
            ),
            (
                "{}", ["APNS_GATEWAY_ADDITIONAL_CONNECTIONS_WHEN_SLOW": "1001"],
                "--additional-connections-when-slow 1001 must be between 0 (one connection always) and 1000"
            ),
        ]
        for (json, environment, message) in cases {
            let file = try Self.write(json, in: folder)
            let (status, _, error) = try Self.run(["serve", "--config", file], environment: environment)
            #expect(status == 64, "\(json)")
            #expect(error.contains(message), "\(error)")
            #expect(!error.contains("s3cret"), "\(error)")
        }
        let (status, _, error) = try Self.run(["list-keys", "--config", "\(folder.path)/missing.json"])
        #expect(status == 64)
        #expect(error.contains("missing.json cannot be read"), "\(error)")
    }

    /// The key commands read the database from the file or the environment too.
    @Test func keyCommandsUseTheConfiguredDatabase() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("queue.sqlite").path
        let file = try Self.write(#"{"database": "\#(database)"}"#, in: folder)
        let (added, key, _) = try Self.run(
            ["add-key", "--config", file, "--name", "ops", "--app", "com.example.app"])
        #expect(added == 0)
        #expect(key.hasPrefix("agk_"))
        let (listed, list, _) = try Self.run(["list-keys"], environment: ["APNS_GATEWAY_DATABASE": database])
        #expect(listed == 0)
        #expect(list.contains("ops\t50.0/s\tcom.example.app"), "\(list)")
        #expect(FileManager.default.fileExists(atPath: database))
        // A serve-only variable, even one serve would refuse, does not concern the key commands.
        let (other, _, _) = try Self.run(
            ["list-keys"], environment: ["APNS_GATEWAY_DATABASE": database, "APNS_GATEWAY_PORT": "eighty"])
        #expect(other == 0)
    }

    /// A key added through a PostgreSQL URL given without its password, the password from
    /// `--database-password-file` (by environment, as a container sets it), is listed from the
    /// same queue: the URL the password went into still names that server and database. (The
    /// test cluster trusts this machine, so what it checks is the URL, not the password.)
    @Test func aPasswordFileOpensThePostgreSQLQueue() async throws {
        let queue = try await TestStore(.postgres)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let passwordFile = folder.appendingPathComponent("db-password").path
        try "p@ss:w/rd\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let environment = ["APNS_GATEWAY_DATABASE": queue.url, "APNS_GATEWAY_DATABASE_PASSWORD_FILE": passwordFile]
        let (added, key, addError) = try Self.run(
            ["add-key", "--name", "ops", "--app", "com.example.app"], environment: environment)
        #expect(added == 0, "\(addError)")
        #expect(key.hasPrefix("agk_"))
        #expect(try await queue.rows("SELECT name FROM api_keys") == ["ops"])
        let (listed, list, _) = try Self.run(["list-keys"], environment: environment)
        #expect(listed == 0)
        #expect(list.contains("ops\t50.0/s\tcom.example.app"), "\(list)")
    }
}
