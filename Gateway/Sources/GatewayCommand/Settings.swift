import Configuration
import Foundation
import SystemPackage

/// Where `apns-gateway` finds the options its command line does not give: the environment
/// (`APNS_GATEWAY_` and the option's name in capitals, dashes as underscores:
/// `APNS_GATEWAY_LEASE_SECONDS=60`), then a JSON configuration file (`--config FILE` or
/// `APNS_GATEWAY_CONFIG`; the options' names as keys: `{"lease-seconds": 60}`), then the option's
/// default. A flag on the command line wins over both.
///
/// The command line is completed before it is parsed, so every value, wherever it came from, is
/// checked by the same option parser, and each option's default stays where it is declared.
///
/// Secrets never sit in the file: a database or proxy URL with a password is refused there
/// (give it by environment); the signing key, the PKCS#12 bundle and their passwords are files or
/// environment variables the file only names. An unknown key, or a value of the wrong type, is an
/// error that names it.
enum Settings {
    enum Kind { case text, whole, number, flag }

    /// Every option a file or the environment may set, with the subcommands that take it: `serve`'s
    /// and the database options the key commands share. (A test checks this list against
    /// `apns-gateway serve --help`.)
    static let options: [(name: String, kind: Kind, allCommands: Bool)] = [
        ("database", .text, true), ("database-wait-seconds", .whole, true), ("database-connections", .whole, true),
        ("database-password-file", .text, true),
        ("credential-key-file", .text, true), ("credential-key-env", .text, true),
        ("host", .text, false), ("port", .whole, false),
        ("key-file", .text, false), ("key-id", .text, false), ("team-id", .text, false),
        ("p12", .text, false), ("password-env", .text, false), ("production", .flag, false),
        ("apns-host", .text, false), ("ca-file", .text, false),
        ("proxy", .text, false), ("proxy-password-env", .text, false),
        ("max-devices", .whole, false), ("max-queue-depth", .whole, false),
        ("instance", .text, false), ("lease-seconds", .whole, false), ("timeout", .number, false),
        ("max-age-seconds", .number, false), ("retention-days", .number, false), ("at-most-once-group", .whole, false),
        ("at-most-once-groups", .whole, false), ("memory-trim-seconds", .number, false),
        ("additional-connections-when-slow", .whole, false), ("log-level", .text, false),
        ("log-format", .text, false), ("access-log", .flag, false), ("otlp-endpoint", .text, false),
        ("otlp-protocol", .text, false),
    ]

    /// Options whose value may carry a password (a URL's): refused from the file, redacted from
    /// swift-configuration's access log.
    static let mayHoldSecrets: Set<String> = ["database", "proxy"]

    static let subcommands = ["serve", "add-key", "list-keys", "revoke-key", "credential", "app"]

    /// `arguments` (without the program's name) completed from the environment and the file.
    static func complete(_ arguments: [String], environment: [String: String]) async throws(SettingsError) -> [String] {
        if arguments.contains(where: { ["-h", "--help", "help", "--version", "--experimental-dump-help"].contains($0) })
        {
            return arguments
        }
        let command = arguments.first { subcommands.contains($0) } ?? "serve"
        let given = Set(
            arguments.compactMap { argument -> String? in
                guard argument.hasPrefix("--") else { return nil }
                return String(argument.dropFirst(2).prefix { $0 != "=" })
            })
        let path = value(of: "--config", in: arguments) ?? environment["APNS_GATEWAY_CONFIG"]
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "apns-gateway")
        ]
        if let path {
            try checkFile(path)
            do {
                providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(path)))
            } catch {
                throw SettingsError("the configuration file \(path) cannot be read: \(error)")
            }
        }
        let reader = ConfigReader(providers: providers)
        var completed = arguments
        for option in options where (command == "serve" || option.allCommands) && !given.contains(option.name) {
            let key = ConfigKey(option.name)
            let secret = mayHoldSecrets.contains(option.name)
            switch option.kind {
            case .text:
                if let text = reader.string(forKey: key, isSecret: secret) { completed += ["--\(option.name)", text] }
            case .whole:
                if let number = reader.int(forKey: key) { completed += ["--\(option.name)", "\(number)"] }
            case .number:
                if let number = reader.double(forKey: key) { completed += ["--\(option.name)", "\(number)"] }
            case .flag:
                if reader.bool(forKey: key) == true { completed.append("--\(option.name)") }
            }
        }
        // An environment variable the reader could not convert is silently skipped by it: name it.
        for option in options
        where (command == "serve" || option.allCommands) && !given.contains(option.name) && option.kind != .text {
            let variable = "APNS_GATEWAY_" + option.name.uppercased().replacingOccurrences(of: "-", with: "_")
            guard let text = environment[variable] else { continue }
            let valid: Bool =
                switch option.kind {
                case .whole: Int(text) != nil
                case .number: Double(text).map(\.isFinite) ?? false
                case .flag: ["true", "false", "1", "0", "yes", "no"].contains(text.lowercased())
                case .text: true
                }
            if !valid { throw SettingsError("\(variable)=\(text) is not \(describe(option.kind))") }
        }
        return completed
    }

    /// The value of `--name VALUE` or `--name=VALUE` in `arguments`.
    static func value(of name: String, in arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == name, index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix(name + "=") { return String(argument.dropFirst(name.count + 1)) }
        }
        return nil
    }

    /// The file's keys are all options, each of its type, and no URL in it holds a password.
    static func checkFile(_ path: String) throws(SettingsError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError("the configuration file \(path) cannot be read (missing, or not readable by this user)")
        }
        guard let fields = try? JSONDecoder().decode([String: Field].self, from: data) else {
            throw SettingsError(
                #"the configuration file \#(path) is not a JSON object of options; write the options' names as keys, as in {"port": 8080, "lease-seconds": 60}"#
            )
        }
        let known = Dictionary(uniqueKeysWithValues: options.map { ($0.name, $0.kind) })
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard let kind = known[key] else {
                throw SettingsError(
                    "\(path): \(key) is not an option; the keys are the long options of `apns-gateway serve --help`, without their dashes"
                )
            }
            let fits: Bool =
                switch (kind, value) {
                case (.text, .text), (.number, .number), (.flag, .flag): true
                case (.whole, .number(let number)): number == number.rounded() && abs(number) < 1e15
                default: false
                }
            guard fits else { throw SettingsError("\(path): \(key) must be \(describe(kind))") }
            if mayHoldSecrets.contains(key), case .text(let url) = value, URLComponents(string: url)?.password != nil {
                throw SettingsError(
                    key == "proxy"
                        ? "\(path): proxy holds a password, and the configuration file holds no secrets: give the URL without it and the password by --proxy-password-env (the name of an environment variable)"
                        : "\(path): database holds a password, and the configuration file holds no secrets: give this URL by environment instead (APNS_GATEWAY_DATABASE, e.g. from a systemd EnvironmentFile only the service can read)"
                )
            }
        }
    }

    /// A value in the file, as JSON typed it.
    enum Field: Decodable {
        case text(String)
        case number(Double)
        case flag(Bool)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let flag = try? container.decode(Bool.self) {
                self = .flag(flag)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .other
            }
        }
    }

    static func describe(_ kind: Kind) -> String {
        switch kind {
        case .text: "text"
        case .whole: "a whole number"
        case .number: "a number"
        case .flag: "true or false"
        }
    }
}

/// A configuration file or environment variable that cannot be used; the message says which and why.
struct SettingsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
